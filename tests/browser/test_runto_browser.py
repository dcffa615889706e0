"""Run to, on the offline page, with the real keyboard and mouse: each breakpoint key (n, >, <,
i, t) stops at the step ``rec.find(...)`` names and a plain loop over the recorded tensors
finds, step after step; and a click on a node shows the source line that made it, with a
link that opens the file in VS Code."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import torch
from torch import nn

import gradviz
from tests.support.browser import chromium, open_local
from tests.support.loops import norm, plain_loop
from tests.support.person import RANGE, click, focus_on, step_of

pytestmark = [pytest.mark.browser, pytest.mark.needs_dot]

STEP_IS = "([r, n]) => Number(r.dataset.step) === n"
FIELD_IS = "([r, v]) => r.querySelector('.gv-runto-threshold').value === v"
OUTCOME_IS = "([r, o]) => r.querySelector('.gv-runto').dataset.outcome === o"


def press_through(page: Any, root: Any, key: str, expected: list[int]) -> list[int]:
    """Press ``key`` once per expected stop, then once more; the steps it stopped at (the
    last press must find nothing after the last stop)."""
    seen = []
    for stop in expected:
        page.keyboard.press(key)
        page.wait_for_function(STEP_IS, arg=[root, stop])
        seen.append(step_of(root))
    page.keyboard.press(key)
    page.wait_for_function(OUTCOME_IS, arg=[root, "none"])
    seen.append(step_of(root))
    return seen


def home(page: Any, root: Any) -> None:
    """Home: the first step (under watch(), the first forward frame)."""
    page.keyboard.press("Home")
    page.wait_for_function(STEP_IS, arg=[root, page.evaluate(RANGE, root)[0]])


def open_stepper(context: Any, page_file: Path) -> tuple[Any, Any, list[str]]:
    page, _, errors = open_local(context, page_file)
    page.set_viewport_size({"width": 1400, "height": 800})
    root = page.wait_for_selector(".gv-stepper")
    return page, root, errors


# -- a NaN: the log of a zero ------------------------------------------------------------
def test_n_runs_to_each_nan_the_loop_finds(tmp_path: Path) -> None:
    a = torch.tensor([0.0, 1.0, 2.0], requires_grad=True)
    c = torch.log(a * 2)  # log(0) = -inf; its backward sends 0 * inf = NaN
    rec = gradviz.record((c * 0).sum(), keep="all")
    nonfinite = plain_loop(rec, lambda g: not bool(torch.isfinite(g).all()))
    assert nonfinite and nonfinite == [s.index for s in rec.find(nonfinite=True)]
    assert rec.steps[nonfinite[0] - 1].type_name == "LogBackward0"
    page_file = rec.save(tmp_path / "nan.html")
    with chromium(tmp_path / "profile") as context:
        page, root, errors = open_stepper(context, page_file)
        home(page, root)
        assert press_through(page, root, "n", nonfinite) == [*nonfinite, nonfinite[-1]]
        status = root.query_selector(".gv-runto-status").text_content()
        assert status == f"none after step {nonfinite[-1]}"
        # the Run button does what the key does, from wherever the stepper is
        home(page, root)
        click(page, root.query_selector(".gv-runto-go"))
        page.wait_for_function(STEP_IS, arg=[root, nonfinite[0]])
        assert not errors, errors


# -- vanishing gradients: a deep sigmoid network -----------------------------------------
class Deep(nn.Module):
    def __init__(self, depth: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for _ in range(depth):
            layers += [nn.Linear(6, 6), nn.Sigmoid()]
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.layers(x)
        return out


def deep_recording() -> gradviz.Recording:
    torch.manual_seed(0)
    model = Deep(12)
    with gradviz.watch(model) as w:
        loss = model(torch.randn(3, 6)).sum()
    return w.record(loss, keep="all")


def type_threshold(page: Any, root: Any, value: str) -> None:
    """Click the threshold field, type ``value`` over what it holds, and press Enter (which
    runs to the breakpoint); then the focus goes back to the stepper for the keys."""
    field = root.query_selector(".gv-runto-threshold")
    click(page, field)
    page.keyboard.press("Control+A")
    page.keyboard.type(value)
    page.keyboard.press("Enter")


def test_norm_module_and_type_keys_stop_where_find_and_the_loop_do(tmp_path: Path) -> None:
    rec = deep_recording()
    below, above = 1e-4, 0.5
    vanishing = plain_loop(rec, lambda g: norm(g) < below)
    large = plain_loop(rec, lambda g: norm(g) > above)
    assert 3 <= len(vanishing) < len(rec) and 3 <= len(large) < len(rec)  # both say something
    assert vanishing == [s.index for s in rec.find(norm_below=below)]
    assert large == [s.index for s in rec.find(norm_above=above)]
    in_layer = [s.index for s in rec.find(module="layers.6")]
    assert len(in_layer) >= 2
    page_file = rec.save(tmp_path / "deep.html")
    with chromium(tmp_path / "profile") as context:
        page, root, errors = open_stepper(context, page_file)
        # below: the threshold typed in the field; Enter runs to the first, then <
        page.keyboard.press("<")  # shows the field (the default threshold: 1e-6)
        page.wait_for_function("(r) => !r.querySelector('.gv-runto-threshold').hidden", arg=root)
        home(page, root)
        type_threshold(page, root, str(below))
        page.wait_for_function(STEP_IS, arg=[root, vanishing[0]])
        focus_on(page, root, "the stepper")
        assert press_through(page, root, "<", vanishing[1:]) == [*vanishing[1:], vanishing[-1]]
        # above: its own threshold
        page.keyboard.press(">")  # its field, with its own threshold (1e3)
        page.wait_for_function(FIELD_IS, arg=[root, "1000"])
        home(page, root)
        type_threshold(page, root, str(above))
        page.wait_for_function(STEP_IS, arg=[root, large[0]])
        focus_on(page, root, "the stepper")
        assert press_through(page, root, ">", large[1:]) == [*large[1:], large[-1]]
        # module: i from a step in layers.6 runs to the next step in it (the active node's)
        home(page, root)
        page.keyboard.press("i")  # a forward frame has no node: it says so, and stays
        page.wait_for_function(OUTCOME_IS, arg=[root, "error"])
        assert step_of(root) == page.evaluate(RANGE, root)[0]
        # choosing layers.6 in the menu with the mouse and keyboard
        menu = root.query_selector(".gv-runto-module")
        click(page, menu)
        page.keyboard.type("layers.6")
        page.keyboard.press("Enter")
        page.wait_for_function("(m) => m.value === 'layers.6'", arg=menu)
        page.keyboard.press("Escape")
        focus_on(page, root, "the stepper")
        assert press_through(page, root, "i", in_layer) == [*in_layer, in_layer[-1]]
        # type: t runs to the next node of the active node's type
        home(page, root)
        page.keyboard.press("End")
        page.wait_for_function(STEP_IS, arg=[root, len(rec)])
        for _ in range(len(rec) - 5):
            page.keyboard.press("ArrowLeft")
        page.wait_for_function(STEP_IS, arg=[root, 5])
        at = 5
        kind = rec.steps[at - 1].type_name
        same = [s.index for s in rec.steps[at:] if s.type_name == kind]
        assert same == [s.index for s in rec.find(type=kind, start=at + 1)] and same
        page.keyboard.press("t")
        page.wait_for_function(STEP_IS, arg=[root, same[0]])
        assert not errors, errors


# -- from the picture to the code ----------------------------------------------------------
class Small(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.tensor([2.0, 3.0]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.exp(x * self.scale)  # the exp
        return y.sum()


def test_a_click_on_a_node_shows_its_source_line_and_link(tmp_path: Path) -> None:
    model = Small()
    with gradviz.watch(model) as w:
        loss = model(torch.tensor([0.5, -1.0]))
    rec = w.record(loss)
    exp_fn = loss.grad_fn.next_functions[0][0]
    node = next(n.id for n in rec.graph.nodes if n.torch_node is exp_fn)
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(lines, 1) if text.endswith("# the exp"))
    here = Path(__file__).resolve().as_posix()
    page_file = rec.save(tmp_path / "small.html", views=["backward"])
    with chromium(tmp_path / "profile") as context:
        page, root, errors = open_stepper(context, page_file)
        page.keyboard.press("End")  # every node drawn (a forward frame draws only some)
        page.wait_for_function(STEP_IS, arg=[root, len(rec)])
        target = root.query_selector(f"svg g.node[id='{rec.graph.prefix}_{node}']")
        click(page, target)
        step = next(s.index for s in rec.steps if s.node_id == node)
        page.wait_for_function(STEP_IS, arg=[root, step])
        code = root.query_selector(".gv-panel .gv-source-line")
        assert code.text_content() == "y = torch.exp(x * self.scale)  # the exp"
        link = root.query_selector(".gv-panel a.gv-source-link")
        assert link.text_content() == f"test_runto_browser.py:{line}"
        assert link.get_attribute("href") == f"vscode://file{quote(here, safe='/:')}:{line}"
        assert not errors, errors
