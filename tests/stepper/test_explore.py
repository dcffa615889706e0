"""``gradviz.explore``: an edited leaf runs the user's function again with real PyTorch; the
gradients are PyTorch's own, the finite differences agree with them, the layout stays while
the structure does, and bad input says what to do."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

import gradviz
from gradviz.errors import InvalidArgument, InvalidInput
from gradviz.stepper.explore import CHANGED, KERNEL_NOTE, Explorer
from gradviz.stepper.page import static_html
from gradviz.stepper.relabel import same_layout
from gradviz.teaching.lessons import lesson, ten_ops

ASSETS = Path(__file__).resolve().parents[2] / "assets"


def smooth(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.sin(a * b) * a + (b / (1 + a * a))


def branchy(a: torch.Tensor) -> torch.Tensor:
    return a * a * 3 if a > 0 else torch.exp(a)


def autograd_grads(fn, dtype: torch.dtype = torch.float32, **values: float) -> list[torch.Tensor]:
    leaves = {n: torch.tensor(v, dtype=dtype, requires_grad=True) for n, v in values.items()}
    return list(torch.autograd.grad(fn(**leaves), list(leaves.values())))


def shown_grads(explorer: Explorer) -> dict[str, list[float]]:
    return {leaf["name"]: leaf["grads"] for leaf in explorer.leaves}


def shapes(svg: str) -> list[str]:
    """Where the drawing's shapes and texts are: everything but the texts' contents."""
    return re.findall(r'(?:points|d|x|y)="[^"]*"', svg)


def test_explore_is_exported_and_makes_an_explorer() -> None:
    assert "explore" in gradviz.__all__
    explorer = gradviz.explore(smooth, a=0.5, b=1.5)
    assert isinstance(explorer, Explorer)
    assert [leaf["name"] for leaf in explorer.leaves] == ["a", "b"]
    assert explorer.values == {"a": [0.5], "b": [1.5]}


def test_an_edit_gives_the_gradients_a_fresh_autograd_run_gives_bitwise() -> None:
    explorer = gradviz.explore(smooth, a=0.5, b=1.5)
    for a, b in ((0.7, 1.5), (-2.25, 1.5), (-2.25, 0.1)):
        explorer.set(a=a, b=b)
        expected = autograd_grads(smooth, a=a, b=b)
        got = shown_grads(explorer)
        for name, want in zip(("a", "b"), expected, strict=True):
            assert torch.equal(torch.tensor(got[name], dtype=torch.float32), want.reshape(1))
        # the recording the stepper shows is the new run's: its leaves' grads are PyTorch's
        for name, want in zip(("a", "b"), expected, strict=True):
            node = explorer.recording.graph.tensor(name).node_id
            step = explorer.recording.step_for(str(node))
            assert step is not None and isinstance(step.leaf_grad_after, torch.Tensor)
            assert torch.equal(step.leaf_grad_after, want)


def test_the_first_run_gives_pytorchs_gradients_too() -> None:
    explorer = gradviz.explore(ten_ops, c=4.0, h=2.0)
    expected = autograd_grads(ten_ops, c=4.0, h=2.0)
    got = shown_grads(explorer)
    assert [torch.tensor(got[n], dtype=torch.float32) for n in ("c", "h")] == [
        e.reshape(1) for e in expected
    ]


def test_the_ten_op_function_draws_the_ten_op_lessons_graph() -> None:
    explorer = gradviz.explore(ten_ops, c=4.0, h=2.0)
    taught = lesson("05-ten-ops").build().record()
    kinds = [step.type_name for step in explorer.recording.steps]
    assert kinds == [step.type_name for step in taught.steps]


def test_finite_differences_agree_with_autograd_in_float64_with_their_step() -> None:
    x = 3.5
    explorer = gradviz.explore(smooth, a=torch.tensor(x, dtype=torch.float64), b=-2.0)
    a, b = explorer.leaves
    (grad_a, grad_b) = autograd_grads(smooth, torch.float64, a=x, b=-2.0)
    estimate = a["estimates"][0]
    assert estimate["dtype"] == "float64"
    assert estimate["h"] == pytest.approx(1e-6 * x)  # 1e-6 * max(1, |x|)
    assert estimate["value"] == pytest.approx(float(grad_a), rel=1e-7, abs=1e-9)
    assert a["agree"] == [True]
    assert b["estimates"][0]["h"] == pytest.approx(2e-6)
    assert b["estimates"][0]["value"] == pytest.approx(float(grad_b), rel=1e-6)
    assert b["agree"] == [True]  # a float32 leaf: agreement within float32's precision


def test_a_wrong_gradient_is_flagged_by_the_finite_difference() -> None:
    class Wrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):  # type: ignore[override]
            return x * x

        @staticmethod
        def backward(ctx, grad):  # type: ignore[override]
            return grad * 3.0  # d(x²)/dx is 2x, not 3

    explorer = gradviz.explore(lambda a: Wrong.apply(a), a=2.0)
    (leaf,) = explorer.leaves
    assert leaf["grads"] == [3.0]
    assert leaf["estimates"][0]["value"] == pytest.approx(4.0)
    assert leaf["agree"] == [False]


def test_same_structure_keeps_layout_and_step_a_branch_lays_out_again() -> None:
    explorer = gradviz.explore(branchy, a=2.0)
    explorer.goto(2)
    before = explorer.svgs["backward"]
    prefix = explorer.data["prefix"]
    explorer.set(a=5.0)
    assert explorer.notice == ""
    assert explorer.step == 2
    assert explorer.data["prefix"] == prefix
    after = explorer.svgs["backward"]
    assert shapes(after) == shapes(before)  # the same layout ...
    assert after != before  # ... with the new numbers (the root is 75 now, not 12)
    assert ">75<" in after
    explorer.set(a=-1.0)  # the other branch: exp, not two multiplications
    assert explorer.notice == CHANGED
    assert explorer.data["prefix"] != prefix
    assert "ExpBackward0" in explorer.svgs["backward"]
    assert explorer.first <= explorer.step <= explorer.last
    grad = autograd_grads(branchy, a=-1.0)[0]
    assert torch.equal(torch.tensor(shown_grads(explorer)["a"]), grad.reshape(1))
    explorer.set(a=-2.0)  # the same (exp) structure again: no notice
    assert explorer.notice == ""


def test_the_browser_setting_values_runs_the_function_again() -> None:
    explorer = gradviz.explore(smooth, a=0.5, b=1.5)
    revision, answered = explorer.revision, explorer.answered
    explorer.set_state({"values": {"a": [1.25], "b": [1.5]}})  # what a front-end sync does
    assert explorer.revision == revision + 1 and explorer.answered == answered + 1
    expected = autograd_grads(smooth, a=1.25, b=1.5)
    assert torch.equal(torch.tensor(shown_grads(explorer)["a"]), expected[0].reshape(1))
    assert explorer.leaves[0]["values"] == [1.25]
    state = json.dumps(explorer.get_state(["data", "svgs", "leaves", "values"]))
    assert "1.25" in state


def test_a_failing_run_shows_a_notice_and_keeps_the_last_recording() -> None:
    def picky(a: torch.Tensor) -> torch.Tensor:
        if a > 10:
            raise ValueError("a must stay at most 10")
        return a * a

    explorer = gradviz.explore(picky, a=2.0)
    recording, answered = explorer.recording, explorer.answered
    explorer.set(a=11.0)
    assert "ValueError: a must stay at most 10" in explorer.notice
    assert explorer.recording is recording
    assert explorer.values == {"a": [2.0]} and explorer.answered == answered + 1
    explorer.set(a=3.0)
    assert explorer.notice == "" and shown_grads(explorer)["a"] == [6.0]


def test_small_tensor_leaves_edit_per_element_big_ones_are_shown_not_edited() -> None:
    def fn(w: torch.Tensor, big: torch.Tensor) -> torch.Tensor:
        return (w * w).sum() + big.sum() * w[0, 1]

    w = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
    big = torch.arange(20.0)
    explorer = gradviz.explore(fn, w=w, big=big)
    small, large = explorer.leaves
    assert small["editable"] and small["shape"] == [2, 2] and len(small["estimates"]) == 4
    assert all(small["agree"])
    assert not large["editable"] and large["estimates"] == [None] * 20
    assert set(explorer.values) == {"w"}
    explorer.set(w=[1.0, 5.0, 3.0, 4.0])
    w2 = torch.tensor([[1.0, 5.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
    b2 = big.clone().requires_grad_(True)
    expected = torch.autograd.grad(fn(w2, b2), [w2, b2])
    got = {leaf["name"]: leaf["grads"] for leaf in explorer.leaves}
    assert torch.equal(torch.tensor(got["w"], dtype=torch.float64), expected[0].reshape(-1))
    assert torch.equal(torch.tensor(got["big"]), expected[1])
    assert w.tolist() == [[1.0, 2.0], [3.0, 4.0]]  # the user's tensor is not changed
    with pytest.raises(InvalidArgument, match="the editable leaves are"):
        explorer.set(big=[0.0] * 20)
    with pytest.raises(InvalidArgument, match="w has 4 elements, given 2"):
        explorer.set(w=[1.0, 2.0])


@pytest.mark.parametrize(
    ("call", "error", "says"),
    [
        (lambda: gradviz.explore(3.0, a=1.0), InvalidArgument, "takes a function"),
        (lambda: gradviz.explore(smooth), InvalidArgument, "needs the leaves"),
        (lambda: gradviz.explore(smooth, a=1.0, c=2.0), InvalidArgument, "no argument 'c'"),
        (lambda: gradviz.explore(smooth, a=1.0), InvalidArgument, "needs 'b' too"),
        (lambda: gradviz.explore(lambda a: a * torch.ones(3), a=1.0), InvalidInput, "y.sum()"),
        (lambda: gradviz.explore(lambda a: a.tolist(), a=1.0), InvalidInput, "not a tensor"),
        (lambda: gradviz.explore(lambda a: a.detach() * 2, a=1.0), InvalidInput, "no grad_fn"),
        (lambda: gradviz.explore(smooth, a=torch.tensor(1), b=1.0), InvalidInput, "floating"),
        (lambda: gradviz.explore(smooth, a="x", b=1.0), InvalidInput, "give a number"),
    ],
)
def test_bad_input_says_what_to_do(call, error, says) -> None:
    with pytest.raises(error, match=re.escape(says)):
        call()


def test_the_saved_page_says_editing_needs_a_kernel_and_has_no_fields(tmp_path: Path) -> None:
    explorer = gradviz.explore(smooth, a=0.5, b=1.5)
    page = explorer.recording.save(tmp_path / "explored.html").read_text(encoding="utf-8")
    assert "editing the leaves needs a running kernel" in page
    assert "gv-leaf-field" not in page  # the page's bundle has no leaves panel
    assert KERNEL_NOTE in static_html(explorer.recording)  # an exported notebook's picture
    plain = gradviz.record(smooth(torch.tensor(0.5, requires_grad=True), torch.tensor(1.5)))
    plain_page = plain.save(tmp_path / "plain.html").read_text(encoding="utf-8")
    assert "running kernel" not in plain_page
    assert KERNEL_NOTE not in plain_page


def test_only_the_widget_bundle_ships_the_leaves_panel() -> None:
    assert "gv-leaf-field" in (ASSETS / "stepper-widget.js").read_text(encoding="utf-8")
    for page in ASSETS.glob("stepper-page*.js"):
        assert "gv-leaf-field" not in page.read_text(encoding="utf-8"), page.name


def test_same_layout_takes_new_texts_only_when_they_match_one_to_one() -> None:
    old = '<g id="p_n0"><path d="M1,2"/><text x="1">5</text></g>'
    old += '<g id="p_e"><text x="3">1</text></g>'
    new = '<g id="p_n0"><path d="M9,9"/><text x="7">12.5</text></g>'
    new += '<g id="p_e"><text x="8">2</text></g>'
    kept = same_layout(old, new)
    assert kept == old.replace(">5<", ">12.5<").replace(">1<", ">2<")
    assert same_layout(old, new.replace('id="p_e"', 'id="p_f"')) is None
    assert same_layout(old, new + '<g id="p_x"><text>3</text></g>') is None


def test_the_kernel_answers_the_panels_hello_so_its_fields_turn_on(monkeypatch) -> None:
    explorer = gradviz.explore(smooth, a=0.5, b=1.5)
    sent: list[object] = []
    monkeypatch.setattr(explorer, "send", sent.append)
    explorer._on_message(explorer, {"type": "explore-hello"})
    assert sent == [{"type": "explore-alive"}]
