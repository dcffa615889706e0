"""The README and the documentation site say what is true: their Python examples run as
printed (each page's blocks in order, in one namespace, as a reader would paste them into
one session, in an empty folder), the stepper's key map lists every key the front end
handles, and each guarantee names test files that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

import gradviz
from gradviz.teaching.lessons import lesson

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
# the README held ten Python examples before the user guide moved to docs/; all still run
EXAMPLES_BEFORE_THE_MOVE = 10


def as_tensor(value: object) -> torch.Tensor:
    assert isinstance(value, torch.Tensor), type(value)
    return value


def pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def python_blocks(page: Path) -> list[str]:
    """The blocks, less notebook-only lines (``%pip install ...`` is for a notebook cell)."""
    blocks = BLOCK.findall(page.read_text(encoding="utf-8"))
    runnable = [
        "".join(line for line in b.splitlines(True) if not line.startswith("%")) for b in blocks
    ]
    return [block for block in runnable if block.strip()]


def name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


PAGES_WITH_CODE = [page for page in pages() if python_blocks(page)]
# what a page's blocks say they write
WRITTEN = {
    "README.md": ("c.svg", "c.png", "replay.html"),
    "docs/how-to/trace.md": ("c.svg", "c.png"),
    "docs/how-to/record.md": (),
    "docs/how-to/stepper.md": ("replay.html",),
    "docs/tutorials/lecturer.md": (
        "lesson.svg",
        "handout.pdf",
        "lesson.html",
        "lesson.pdf",
        "lesson.pptx",
        "forward-and-backward.html",
    ),
    "docs/tutorials/practitioner.md": ("model.svg", "model.html", "why.svg", "step.html"),
    "docs/how-to/video.md": ("replay.gif",),
    "docs/how-to/training.md": ("training.html",),
}


def test_the_pages_have_every_python_example() -> None:
    """The examples moved from the README to the site, none was lost on the way."""
    assert len(python_blocks(README)) >= 3
    assert {"README.md", "docs/how-to/record.md", "docs/how-to/trace.md"} <= {
        name(page) for page in PAGES_WITH_CODE
    }
    examples = sum(len(python_blocks(page)) for page in PAGES_WITH_CODE)
    assert examples >= EXAMPLES_BEFORE_THE_MOVE + 2  # and the two tutorials


@pytest.mark.needs_dot
@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=name)
def test_every_python_block_runs_in_order(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__readme__"}
    ten_ops = None
    for number, block in enumerate(python_blocks(page), 1):
        code = compile(block, f"{name(page)} python block {number}", "exec")
        exec(code, namespace)  # a failing block fails the test with its own traceback
        if "rec = gradviz.record(k" in block:
            ten_ops = namespace["rec"]
    # what the blocks say they write is there
    for written in WRITTEN.get(name(page), ()):
        assert (tmp_path / written).stat().st_size > 0, written
    if "save_steps" in page.read_text(encoding="utf-8"):
        assert len(list((tmp_path / "steps").glob("step-*.svg"))) > 3
    if ten_ops is not None:
        check_the_ten_op_comments(ten_ops)


def check_the_ten_op_comments(ten_ops: object) -> None:
    """What the record block's comments claim is what PyTorch computes."""
    assert isinstance(ten_ops, gradviz.Recording)
    div = ten_ops.steps[2]
    assert div.type_name == "DivBackward0"
    built = lesson("ten-ops").build()
    k, i, g, h = (built.names[n] for n in "kigh")
    (dk_di,) = torch.autograd.grad(k, i, retain_graph=True)
    dk_dg, dk_dh_through_i = torch.autograd.grad(i, (g, h), grad_outputs=dk_di)
    assert torch.equal(as_tensor(div.grad_outputs[0]), dk_di)  # "(18,)"
    assert torch.equal(as_tensor(div.grad_inputs[0]), dk_dg)  # "(9, -72)"
    assert torch.equal(as_tensor(div.grad_inputs[1]), dk_dh_through_i)


def test_the_ten_op_example_is_checked_where_it_is() -> None:
    holders = [p for p in PAGES_WITH_CODE if "rec = gradviz.record(k" in p.read_text("utf-8")]
    assert {"README.md", "docs/how-to/record.md"} <= {name(p) for p in holders}


def test_the_pages_count_the_lessons() -> None:
    from gradviz.teaching.lessons import LESSONS

    words = {10: "ten", 11: "eleven", 12: "twelve", 13: "thirteen"}
    count = len(LESSONS)
    said = {word for word in words.values() if word != words.get(count)}
    counted = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        counted += re.findall(r"the (\w+)(?: built-in)? lessons", text)
    assert counted, "no page says how many lessons there are"
    wrong = [w for w in counted if w in said or (w.isdigit() and int(w) != count)]
    assert not wrong, wrong


# --- the stepper's key map ---------------------------------------------------------------

# how the front end names a key in its handlers: a literal compared with event.key (or with
# ``k``, its copy), passed to useKey, or a property of a key table such as
#   const keys = { PageDown: () => ..., o: () => ..., " ": () => ... }
COMPARED = re.compile(r"""\b(?:k|key|event\.key)\s*[!=]==\s*"([^"]+)\"""")
USE_KEY = re.compile(r"""useKey\(\s*event\s*,\s*"([^"]+)\"""")
TABLE = re.compile(r"const (?:keys|moves|[A-Z_]*KEYS|[A-Z_]*MOVES) = \{(.*?)\};", re.DOTALL)
TABLE_KEY = re.compile(r"""^\s*(\w+|"[^"]+")\s*:""", re.MULTILINE)
# how the key map writes the keys the handlers name
SHOWN_AS = {
    " ": "Space",
    "ArrowRight": "→",
    "ArrowLeft": "←",
    "ArrowUp": "↑",
    "ArrowDown": "↓",
}


def handled_keys() -> set[str]:
    scripts = sorted((ROOT / "frontend" / "src").rglob("*.js"))
    assert scripts
    found: set[str] = set()
    for script in scripts:
        text = script.read_text(encoding="utf-8")
        found |= set(COMPARED.findall(text)) | set(USE_KEY.findall(text))
        for table in TABLE.findall(text):
            found |= {key.strip('"') for key in TABLE_KEY.findall(table)}
    return found


def test_the_key_map_lists_every_key_the_stepper_handles() -> None:
    handled = handled_keys()
    assert {"ArrowRight", "PageDown", " ", "o", "m", "h", "d", "s", "F", "Escape"} <= handled
    table = (DOCS / "keys.md").read_text(encoding="utf-8")
    shown = set(re.findall(r"<kbd>(.*?)</kbd>", table))
    missing = sorted(
        SHOWN_AS.get(key, key) for key in handled if SHOWN_AS.get(key, key) not in shown
    )
    assert not missing, f"keys the stepper handles but docs/keys.md does not list: {missing}"
    rows = [line for line in table.splitlines() if line.startswith("| <kbd>")]
    assert len(rows) == len({row.split(" | ")[0] for row in rows})  # one row per key


# --- the guarantees ----------------------------------------------------------------------


def test_each_guarantee_names_test_files_that_exist() -> None:
    text = (DOCS / "guarantees.md").read_text(encoding="utf-8")
    promises = re.split(r"^- \*\*", text, flags=re.MULTILINE)[1:]
    assert len(promises) >= 10
    for promise in promises:
        named = re.findall(r"`(tests/[\w/]+\.py)`", promise)
        title = promise.split("**")[0]
        assert named, f"the guarantee {title!r} names no test"
        for path in named:
            assert (ROOT / path).is_file(), f"{title!r} names {path}, which does not exist"


def test_the_readme_links_to_files_that_exist() -> None:
    """The README is read on its own (the site's strict build checks the site's links)."""
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if "://" not in t]
    assert "docs/images/stepper.png" in local and "docs/reference.md" in local
    missing = [t for t in local if not (ROOT / t).is_file()]
    assert not missing, missing
