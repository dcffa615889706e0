"""``watch_training``: every stored number is PyTorch's own (``torch.linalg.vector_norm`` of
``.grad``, of ``after - before``, the group's ``lr``, the loss), training is bitwise the
same with and without it, and nothing stays hooked after the block."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

import gradviz
from gradviz.model.training import owner_of

Loop = Callable[[int], None]


def tiny(seed: int = 0) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Dropout(0.2), nn.Linear(12, 1))
    return model, torch.randn(16, 6), torch.randn(16, 1)


def vnorm(t: torch.Tensor) -> float:
    return float(torch.linalg.vector_norm(t))


def train(
    model: nn.Module,
    opt: torch.optim.Optimizer,
    x: torch.Tensor,
    y: torch.Tensor,
    steps: int,
    seen: list[dict[str, object]] | None = None,
) -> None:
    """A plain loop; ``seen`` gets what a user would read by hand at each step."""
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        before = [p.detach().clone() for p in model.parameters()]
        grads = [vnorm(p.grad) for p in model.parameters()]  # type: ignore[arg-type]
        lrs = [g["lr"] for g in opt.param_groups]
        opt.step()
        if seen is not None:
            seen.append(
                {
                    "loss": float(loss.detach()),
                    "grads": grads,
                    "updates": [
                        vnorm(p.detach() - b)
                        for p, b in zip(model.parameters(), before, strict=True)
                    ],
                    "lrs": lrs,
                }
            )


def test_every_stored_number_is_pytorchs_own() -> None:
    model, x, y = tiny()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    seen: list[dict[str, object]] = []
    with gradviz.watch_training(model, opt) as run:
        train(model, opt, x, y, 7, seen)
    names = [n for n, _ in model.named_parameters()]
    assert run.params == names and len(run) == 7 and list(run.steps) == list(range(7))
    for row, expected in enumerate(seen):
        assert run.loss(row) == expected["loss"]
        assert run.lr(0)[row] == expected["lrs"][0]  # type: ignore[index]
        for i, name in enumerate(names):
            assert run.grad_norm(name)[row] == expected["grads"][i]  # type: ignore[index]
            assert run.update_norm(name)[row] == expected["updates"][i]  # type: ignore[index]


def test_norms_of_mixed_precision_parameters_are_each_their_own_exactly() -> None:
    torch.manual_seed(0)
    weights = nn.ParameterList(
        nn.Parameter(torch.randn(8, dtype=dtype) * 1e-3)
        for dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16)
    )
    opt = torch.optim.SGD(weights, lr=0.1)
    expected: list[list[float]] = []
    with gradviz.watch_training(weights, opt) as run:
        for _ in range(3):
            opt.zero_grad()
            sum(
                (w.double() * torch.arange(8.0, dtype=torch.float64)).sum() ** 2 for w in weights
            ).backward()  # type: ignore[union-attr]
            expected.append([vnorm(w.grad) for w in weights])  # type: ignore[arg-type]
            opt.step()
    for row, norms in enumerate(expected):
        assert [run.grad_norm(name)[row] for name in run.params] == norms


def test_module_norms_are_the_norm_of_the_modules_gradients() -> None:
    model, x, y = tiny()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    expected: dict[str, list[float]] = {"0": [], "3": []}
    with gradviz.watch_training(model, opt) as run:
        for _ in range(4):
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            for module in expected:
                owned = [p for n, p in model.named_parameters() if owner_of(n) == module]
                grads = [p.grad.flatten() for p in owned]  # type: ignore[union-attr]
                expected[module].append(vnorm(torch.cat(grads)))
            opt.step()
    for module, values in expected.items():
        # float64 sqrt(sum(norm^2)) against float32 norm of the concatenation: rounding only
        assert run.module_norm(module) == pytest.approx(values, rel=1e-6)


def _final_state(watched: bool) -> tuple[list[torch.Tensor], list[torch.Tensor], dict[str, object]]:
    model, x, y = tiny(3)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    if watched:
        with gradviz.watch_training(model, opt, every=2, keep_steps=[1, 4]) as run:
            train(model, opt, x, y, 6)
        assert sorted(run.recordings) == [1, 4]
    else:
        train(model, opt, x, y, 6)
    grads = [p.grad.clone() for p in model.parameters()]  # type: ignore[union-attr]
    return [p.detach().clone() for p in model.parameters()], grads, opt.state_dict()


def test_training_is_bitwise_the_same_with_and_without_gradviz() -> None:
    plain_w, plain_g, plain_state = _final_state(False)
    seen_w, seen_g, seen_state = _final_state(True)
    assert all(torch.equal(a, b) for a, b in zip(plain_w, seen_w, strict=True))
    assert all(torch.equal(a, b) for a, b in zip(plain_g, seen_g, strict=True))
    for key, state in plain_state["state"].items():  # type: ignore[attr-defined]
        for name, value in state.items():
            assert torch.equal(value, seen_state["state"][key][name])  # type: ignore[index]


def test_hooks_are_removed_even_when_the_loop_raises() -> None:
    model, x, y = tiny()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    original = torch.autograd.backward
    with pytest.raises(ZeroDivisionError), gradviz.watch_training(model, opt) as run:
        train(model, opt, x, y, 2)
        _ = 1 / 0
    assert torch.autograd.backward is original
    assert not opt._optimizer_step_pre_hooks and not opt._optimizer_step_post_hooks
    assert len(run) == 2
    with pytest.raises(gradviz.GradvizError, match="inside the watch_training block"):
        run.log(1.0)


def test_a_backward_that_raises_inside_the_block_leaves_nothing_hooked() -> None:
    model, x, y = tiny()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    original = torch.autograd.backward
    with (
        pytest.raises(RuntimeError, match="second time"),
        gradviz.watch_training(model, opt, keep_steps=[1]) as run,
    ):
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        loss.backward()  # a step to record, on a freed graph: PyTorch's own error
    assert torch.autograd.backward is original
    assert not opt._optimizer_step_pre_hooks and not opt._optimizer_step_post_hooks
    assert any("step 1: not recorded in full" in note for note in run.notes)
    assert len(run) == 1 and not run.recordings


def test_every_k_th_step_and_the_full_recordings() -> None:
    model, x, y = tiny()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with gradviz.watch_training(model, opt, every=3, keep_steps=[2]) as run:
        train(model, opt, x, y, 8)
    assert list(run.steps) == [0, 3, 6]
    recording = run.recording(2)
    assert len(recording.steps) > 0
    with pytest.raises(gradviz.InvalidArgument, match="keep_steps"):
        run.recording(3)


def test_accumulated_gradients_are_the_ones_measured() -> None:
    model, x, y = tiny()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    expected = []
    with gradviz.watch_training(model, opt) as run:
        for _ in range(3):
            opt.zero_grad()
            for half in (x[:8], x[8:]):
                ((model(half) - y[:8]) ** 2).mean().backward()
            expected.append(vnorm(model[0].weight.grad))  # type: ignore[arg-type]
            opt.step()
    assert run.grad_norm("0.weight") == expected


def test_without_an_optimizer_each_backward_is_a_step_and_log_gives_the_loss() -> None:
    model, x, y = tiny()
    with gradviz.watch_training(model) as run:
        for step in range(3):
            model.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            run.log(loss * 0 + step)  # the loss the user wants shown, not the root
            (loss * 1000).backward()
    assert [run.loss(i) for i in range(3)] == [0.0, 1.0, 2.0]
    assert run.update_norm("0.weight") == [None, None, None]
    assert run.n_groups == 0 and run.lr() == []


def test_parameters_without_a_gradient_are_none_not_zero() -> None:
    model, x, y = tiny()
    extra = nn.Parameter(torch.ones(3))
    opt = torch.optim.SGD([*model.parameters(), extra], lr=0.1)
    with gradviz.watch_training(model, opt) as run:
        train(model, opt, x, y, 2)
    assert run.params[-1] == "group0.param4"
    assert run.grad_norm("group0.param4") == [None, None]
    assert run.first_nonfinite() is None


def test_bad_arguments_say_what_to_do() -> None:
    model, _, _ = tiny()
    with pytest.raises(gradviz.InvalidArgument, match=r"torch\.nn\.Module"):
        gradviz.watch_training("model")  # type: ignore[arg-type]
    with pytest.raises(gradviz.InvalidArgument, match="every="):
        gradviz.watch_training(model, every=0)
    with pytest.raises(gradviz.InvalidArgument, match="model, the optimizer"):
        gradviz.watch_training()


def test_json_is_standard_and_states_the_memory(tmp_path: Path) -> None:
    model, x, y = tiny()
    opt = torch.optim.SGD(model.parameters(), lr=1e3)  # diverges: NaN and Inf in the data
    with gradviz.watch_training(model, opt) as run:
        train(model, opt, x, y, 12)
    path = run.save(tmp_path / "run.json")
    data = json.loads(path.read_text(encoding="utf-8"), parse_constant=pytest.fail)
    assert data["format"] == "gradviz.training-run/1"
    assert len(data["steps"]) == 12
    p = len(run.params)
    assert data["bytes_per_step"] == 8 * (2 * p + 1 + 2) + 1
    assert data == json.loads(json.dumps(run.to_dict()))
    with pytest.raises(gradviz.InvalidArgument, match=r"\.html or \.json"):
        run.save(tmp_path / "run.svg")


def test_html_page_is_self_contained(tmp_path: Path) -> None:
    model, x, y = tiny()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with gradviz.watch_training(model, opt) as run:
        train(model, opt, x, y, 3)
    page = run.save(tmp_path / "t.html", title="</script><b>x").read_text(encoding="utf-8")
    namespaces = ("http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink")  # names, not loads
    for namespace in namespaces:
        page = page.replace(namespace, "")
    assert "<b>x" not in page and "http://" not in page
    assert "https://" not in page and "gv-strip-data" in page


def test_the_bands_match_the_single_backward_health() -> None:
    from gradviz.analysis import health
    from gradviz.model import training

    assert training.VANISHING_BELOW == health.VANISHING_BELOW
    assert training.EXPLODING_ABOVE == health.EXPLODING_ABOVE
    assert math.isclose(training.NO_GRAD, -1.0)


def test_edge_norms_are_the_norms_of_what_each_edge_sent() -> None:
    """edges=True against full recordings of the same (bitwise equal) training."""
    runs = []
    for options in ({"edges": True}, {"keep_steps": range(3), "keep": "all"}):
        model, x, y = tiny(5)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with gradviz.watch_training(model, opt, **options) as run:  # type: ignore[arg-type]
            train(model, opt, x, y, 3)
        runs.append(run)
    edged, recorded = runs
    assert sorted(edged.edge_norms) == [0, 1, 2] and not recorded.edge_norms
    for step in range(3):
        expected = {
            f"{s.node_id}.{slot}": vnorm(g)
            for s in recorded.recording(step).steps
            for slot, g in enumerate(s.grad_inputs)
            if isinstance(g, torch.Tensor)
        }
        assert len(expected) > 5
        assert edged.edge_norms[step] == expected


def test_a_read_that_fails_is_a_warning_and_a_note_never_an_error_in_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gradviz.capture import training as capture

    def broken(grads: object) -> object:
        raise RuntimeError("no norm today")

    monkeypatch.setattr(capture, "_foreach_norms", broken)
    model, x, y = tiny()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with (
        pytest.warns(gradviz.GradvizWarning, match="no norm today"),
        gradviz.watch_training(model, opt) as run,
    ):
        train(model, opt, x, y, 2)
    assert run.grad_norm("0.weight") == [None, None]
    assert run.update_norm("0.weight")[1] is not None
    assert any("no norm today" in note for note in run.notes)


def test_memory_is_the_stated_bytes_per_step() -> None:
    """The run's arrays hold exactly their items; tensors wait at most 64 steps."""
    model, x, y = tiny()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with gradviz.watch_training(model, opt) as run:
        train(model, opt, x, y, 150)
        assert len(run) == 150  # a query brings the waiting rows in
    p, g = len(run.params), run.n_groups
    arrays = (run.steps, run.losses, run.has_loss, run.grad_norms, run.update_norms, run.lrs)
    held = sum(len(a) * a.itemsize for a in arrays)
    assert held == 150 * run.bytes_per_step() == 150 * (8 * (2 * p + g + 2) + 1)
