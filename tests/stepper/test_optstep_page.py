"""An optimizer step's page and widget data: what ``optimizer.step()`` did, shown
after the last backward step, checked against norms recomputed here from the tensors."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch

import gradviz
from gradviz.errors import InvalidArgument
from gradviz.model.summarize import summarize
from gradviz.stepper.page import unpack_state

pytestmark = pytest.mark.needs_dot

# the page's row of one parameter (gradviz/replay/optstep.py)
NAME, BOX, GROUP, W, AFTER, DW, RATIO, G, ACCUMULATED, GRAD, UPDATE, BEFORE, STATE = range(13)


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))


def norm(tensor: torch.Tensor) -> float:
    return float(torch.linalg.vector_norm(tensor.detach().double()))


def close(shown: float | None, value: float) -> bool:
    """The page keeps four significant digits."""
    return shown is not None and math.isclose(shown, value, rel_tol=1e-3, abs_tol=1e-12)


def stepped(
    make: Any, zero_grad: bool = True, steps: int = 2
) -> tuple[Any, torch.nn.Module, dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """``steps`` recorded training steps; the parameters before the last one and the
    gradients it used, copied here."""
    model = mlp()
    optimizer = make(model.parameters())
    data = torch.randn(6, 3)
    before: dict[str, torch.Tensor] = {}
    for _ in range(steps):
        if zero_grad:
            optimizer.zero_grad()
        before = {n: p.detach().clone() for n, p in model.named_parameters()}
        step = gradviz.record_step(optimizer, model(data).pow(2).mean(), params=model)
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}  # type: ignore[union-attr]
    return step, model, before, grads


OPTIMIZERS = {
    "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    "adamw": lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_page_rows_match_the_tensors(name: str) -> None:
    step, model, before, grads = stepped(OPTIMIZERS[name])
    state = unpack_state(step.html())
    data = state["data"]["optimizer"]
    made = OPTIMIZERS[name]([torch.zeros(1)])
    assert data["optimizer"] == type(made).__name__
    rows = {row[NAME]: row for row in data["params"]}
    assert set(rows) == {n for n, _ in model.named_parameters()}
    leaves = {t.name: t.id for t in step.recording.graph.tensors if t.role.value == "leaf"}
    for param_name, param in model.named_parameters():
        row = rows[param_name]
        update = param.detach() - before[param_name]
        assert close(row[W], norm(before[param_name]))
        assert close(row[AFTER], norm(param))
        assert close(row[DW], norm(update))
        assert close(row[RATIO], norm(update) / norm(before[param_name]))
        assert close(row[G], norm(grads[param_name]))
        assert row[ACCUMULATED] == 0
        assert row[BOX] == leaves[param_name]  # the leaf box the page marks
        assert [k for k, _ in row[STATE]] == list(step_state(model, param, step))
    groups = data["groups"][0]
    assert ["lr", str(made.param_groups[0]["lr"])] in groups
    assert data["rule"] and "w ← w" in data["rule"]


def step_state(model: torch.nn.Module, param: torch.Tensor, step: Any) -> dict[str, Any]:
    """The optimizer state keys gradviz read after the step, from its own record."""
    item = step.param(next(n for n, p in model.named_parameters() if p is param))
    return dict(item.state_after)


def test_adam_state_used_and_after_are_what_the_optimizer_holds() -> None:
    model = mlp()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    data = torch.randn(6, 3)
    used: dict[torch.Tensor, dict[str, torch.Tensor]] = {}
    for _ in range(2):
        optimizer.zero_grad()
        used = {p: {k: v.clone() for k, v in optimizer.state[p].items()} for p in optimizer.state}
        step = gradviz.record_step(optimizer, model(data).pow(2).mean(), params=model)
    rows = {r[NAME]: r for r in unpack_state(step.html())["data"]["optimizer"]["params"]}
    for param_name, param in model.named_parameters():
        held = optimizer.state[param]
        shown_before, shown_after = dict(rows[param_name][BEFORE]), dict(rows[param_name][STATE])
        assert set(shown_after) == set(shown_before) == {"step", "exp_avg", "exp_avg_sq"}
        assert (shown_before["step"], shown_after["step"]) == ("1", "2")
        assert float(used[param]["step"]) == 1.0 and float(held["step"]) == 2.0
        for key in ("exp_avg", "exp_avg_sq"):
            assert shown_before[key] == summarize(used[param][key]).text(48)
            assert shown_after[key] == summarize(held[key]).text(48)
            assert not torch.equal(used[param][key], held[key])


def test_accumulated_gradients_are_said_and_measured() -> None:
    step, _, _, grads = stepped(OPTIMIZERS["sgd_momentum"], zero_grad=False)
    data = unpack_state(step.html())["data"]["optimizer"]
    assert data["accumulated"] == 1
    for row in data["params"]:
        assert row[ACCUMULATED] == 1
        assert close(row[G], norm(grads[row[NAME]]))  # the sum of both backward passes


def test_only_an_optimizer_steps_page_ships_its_data_and_code(tmp_path: Path) -> None:
    step, *_ = stepped(OPTIMIZERS["sgd_momentum"])
    plain = step.recording.save(tmp_path / "plain.html").read_text(encoding="utf-8")
    page = step.save(tmp_path / "step.html").read_text(encoding="utf-8")
    assert "optimizer" not in unpack_state(plain)["data"]
    bare = step.recording.save(tmp_path / "bare.html", explain=False).read_text(encoding="utf-8")
    panel_code = "what optimizer.step() did to each parameter"  # the panel button's title
    assert panel_code not in bare  # no explanation data: no explanations' code at all
    assert panel_code in page
    assert "optimizer.step() as text" in page  # readable without script too
    big = step.html(explain=False)  # no memory/health toggles: the panel still ships
    assert panel_code in big and "optimizer" in unpack_state(big)["data"]


def test_save_keywords_and_formats(tmp_path: Path) -> None:
    step, *_ = stepped(OPTIMIZERS["sgd_momentum"])
    with pytest.raises(InvalidArgument, match=r"\.html or \.json"):
        step.save(tmp_path / "step.svg")
    with pytest.raises(InvalidArgument, match="health"):
        step.save(tmp_path / "step.html", health=True)
    saved = json.loads(step.save(tmp_path / "step.json").read_text(encoding="utf-8"))
    assert saved["format"] == "gradviz.optimizer-step/1"
    titled = step.save(tmp_path / "t.html", title="my <step>").read_text(encoding="utf-8")
    assert "<title>my &lt;step&gt;</title>" in titled


def test_user_names_cannot_break_the_page(tmp_path: Path) -> None:
    torch.manual_seed(0)
    w = torch.randn(3, requires_grad=True)
    optimizer = torch.optim.SGD([w], lr=0.1)
    step = gradviz.record_step(optimizer, (w * 2).sum(), names={"</script><b>w": w})
    page = step.save(tmp_path / "s.html").read_text(encoding="utf-8")
    assert "</script><b>" not in page
    assert unpack_state(page)["data"]["optimizer"]["params"][0][G] is not None


def test_the_widget_carries_the_step() -> None:
    pytest.importorskip("anywidget")
    from gradviz.stepper.widget import Stepper

    step, model, _, _ = stepped(OPTIMIZERS["adamw"])
    widget = Stepper(step)
    rows = {r[NAME]: r for r in widget.data["optimizer"]["params"]}
    for param_name, param in model.named_parameters():
        assert close(rows[param_name][AFTER], norm(param))
    assert widget.recording is step.recording


def test_a_step_displays_as_the_stepper_with_its_panel() -> None:
    pytest.importorskip("anywidget")
    step, *_ = stepped(OPTIMIZERS["sgd_momentum"])
    data, _ = step._repr_mimebundle_()
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"]
    assert "<svg" in data["text/html"]  # the final step, and the stepper with the panel:
    assert unpack_state(data["text/html"])["data"]["optimizer"]


def test_the_step_page_shows_the_parameters_the_backward_used() -> None:
    """The optimizer changes the parameters in place; the drawing keeps the values the
    backward pass used (they were read before the step), compared with PyTorch's own."""
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    step = gradviz.record_step(opt, model(torch.randn(4, 3)).pow(2).sum(), params=model)
    for name, value in before.items():
        record = next(t for t in step.recording.graph.tensors if t.name == name)
        assert record.data is not None and record.data.available
        assert record.data.min == pytest.approx(value.min().item())
        assert record.data.max == pytest.approx(value.max().item())
        assert not torch.equal(value, dict(model.named_parameters())[name].detach())
