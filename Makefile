# gradviz: `make demo` and `make test` are the whole quick start. Each target first sets up
# .venv (quick when nothing changed) and the system programs it needs.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# A pinned CPU build by default; override elsewhere, e.g. `make test TORCH_SPEC=torch`.
TORCH_SPEC ?= torch==2.13.0
OUT ?= out
SYSTEM_PACKAGES := .ci/ensure-system-packages

.PHONY: help setup system system-browser demo test lint typecheck pytest lab bench assets clean FORCE

help:
	@echo "make demo   set up, then render the built-in lessons into $(OUT)/"
	@echo "make test   set up, then ruff, mypy --strict and the whole pytest suite"
	@echo "make lab    set up, then open JupyterLab on notebooks/"
	@echo "make assets regenerate the example diagrams in assets/"
	@echo "make bench  set up, install torchviz/torchlens, compare speed and memory ($(OUT)/bench.json)"

# The venv is rebuilt when pyproject.toml, this Makefile or TORCH_SPEC change.
$(VENV)/.torch-spec: FORCE
	@mkdir -p $(VENV)
	@echo '$(TORCH_SPEC)' | cmp -s - $@ || echo '$(TORCH_SPEC)' > $@

$(VENV)/.installed: pyproject.toml Makefile $(VENV)/.torch-spec
	@echo "==> setting up $(VENV) with $(TORCH_SPEC)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade "pip>=25.1"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[notebook]" \
		--group test --group lint
	@touch $@
	@echo "==> $(VENV) is ready"

setup: $(VENV)/.installed system

# Graphviz for everything that draws; Chromium only for the browser tests.
system:
	@bash $(SYSTEM_PACKAGES) dot=graphviz

system-browser:
	@bash $(SYSTEM_PACKAGES) chromium=chromium

demo: setup
	@echo "==> rendering the built-in lessons into $(OUT)/"
	$(BIN)/python -m gradviz.teaching.gallery $(OUT)

lint: setup
	@echo "==> ruff"
	$(BIN)/ruff check gradviz tests
	$(BIN)/ruff format --check gradviz tests

typecheck: setup
	@echo "==> mypy --strict gradviz"
	$(BIN)/mypy --strict gradviz

pytest: setup system-browser
	@echo "==> pytest"
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test: lint typecheck pytest

# JupyterLab refuses to start as root without --allow-root (containers, CI machines).
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)
LAB_ARGS ?=

lab: setup
	@echo "==> JupyterLab on notebooks/ (Ctrl-C to stop)"
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 $(LAB_ROOT) $(LAB_ARGS) notebooks/

assets: setup
	@echo "==> regenerating the example diagrams in assets/"
	$(BIN)/python -m gradviz.teaching.gallery --assets assets

# The peers gradviz is measured against; each is installed only if pip's plan pulls no
# other torch (nor CUDA packages): the benchmark notes a peer that is missing.
BENCH_PEERS ?= torchviz torchlens
BENCH_ARGS ?=

bench: setup
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
	$(BIN)/python tests/benchmarks/bench.py --json $(OUT)/bench.json $(BENCH_ARGS)

clean:
	rm -rf $(OUT) .pytest_cache .mypy_cache .ruff_cache
