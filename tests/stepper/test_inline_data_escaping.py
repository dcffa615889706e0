"""Every inline data block gradviz writes (replay page, diff pages, optimizer step page)
goes through one escaper, ``gradviz.escape.json_for_script``: names that would open a
comment inside a script (``<!--<script>``), close it, or break a JavaScript string cannot
turn the rest of the page into script text. Chromium's own parser is the judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

import gradviz
from gradviz.analysis.diff import diff_recordings
from gradviz.escape import json_for_script
from gradviz.render.reports import diff_page

# Names meant to break out of a <script> element, or out of JSON inside JavaScript.
HOSTILE_NAMES = [
    "<!--<script>",
    "</script>",
    "<!--",
    "-->",
    "]]>",
    "<script>",
    "</SCRIPT >",
    "a\u2028b\u2029c",
    "nul\x00end",
    "lone\ud800half",
    "\udfffback",
    "&amp; & <b>",
]


def test_script_json_holds_no_markup_and_reads_back() -> None:
    value = {"names": HOSTILE_NAMES, "nested": {name: [name] for name in HOSTILE_NAMES}}
    text = json_for_script(value)
    for markup in ("<", ">", "&", "\u2028", "\u2029", "\x00"):
        assert markup not in text
    assert all(not 0xD800 <= ord(char) <= 0xDFFF for char in text)
    text.encode("utf-8")  # writable as UTF-8
    assert json.loads(text) == value


def _custom_function(name: str) -> type[torch.autograd.Function]:
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad * 2

    attributes = {"forward": staticmethod(forward), "backward": staticmethod(backward)}
    return type(name, (torch.autograd.Function,), attributes)


def _recording(extra: bool) -> gradviz.Recording:
    """Leaves named by every hostile name, custom Functions by those a class name can hold
    (not NUL, not a lone surrogate); B has one more op than A."""
    leaves = {name: torch.tensor([1.0, 2.0], requires_grad=True) for name in HOSTILE_NAMES}
    y = torch.stack(list(leaves.values())).sum(0)
    for name in HOSTILE_NAMES:
        if "\x00" not in name and "lone" not in name and "back" not in name:
            y = _custom_function(name).apply(y)
    if extra:
        y = y.exp()
    return gradviz.record(y.sum(), names=leaves)


def _optimizer_page(path: Path) -> Path:
    weight = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    optimizer = torch.optim.SGD([weight], lr=0.1)
    loss = _custom_function(HOSTILE_NAMES[0]).apply(weight).pow(2).sum()
    step = gradviz.record_step(optimizer, loss, names={HOSTILE_NAMES[1]: weight})
    return step.save(path)


# In the page: each JSON data block parses, and the page's own elements after it exist.
CHECK = """() => {
  const blocks = [...document.querySelectorAll('script[type="application/json"]')];
  const parsed = blocks.map((b) => { try { JSON.parse(b.textContent); return true; }
                                     catch (e) { return String(e); } });
  return { parsed, scripts: document.scripts.length };
}"""


@pytest.mark.browser
@pytest.mark.needs_dot
def test_hostile_names_leave_every_page_whole_in_chromium(browser: Any, tmp_path: Path) -> None:
    from tests.support.browser import open_local

    a, b = _recording(False), _recording(True)
    diff = a.diff(b)
    plain = tmp_path / "diff-plain.html"
    plain.write_text(diff_page(diff_recordings(a, b)), encoding="utf-8")
    pages = {
        "replay": (a.save(tmp_path / "replay.html"), ".gv-stepper"),
        "diff": (diff.save(tmp_path / "diff.html"), ".gv-stepper"),
        "diff-plain": (plain, ".gv-diff-graph svg"),
        "optimizer": (_optimizer_page(tmp_path / "optimizer.html"), ".gv-stepper"),
    }
    for name, (path, drawn) in pages.items():
        page, _requests, errors = open_local(browser, path)
        page.wait_for_selector(drawn)
        seen = page.evaluate(CHECK)
        assert seen["parsed"] and all(ok is True for ok in seen["parsed"]), (name, seen)
        assert errors == [], (name, errors)
        page.close()
