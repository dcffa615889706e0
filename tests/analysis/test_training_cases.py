"""``watch_training`` on the cases it is for: a network that diverges, a deep sigmoid network
whose first layers' gradients vanish, and a small transformer with and without warm-up and
clipping. Each mark is compared with a plain loop over ``p.grad`` run separately, without
gradviz, from the same seed."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
from torch import nn

import gradviz
from gradviz.model.training import owner_of

Build = Callable[[], tuple[nn.Module, torch.optim.Optimizer, Callable[[], torch.Tensor]]]


def module_norms(model: nn.Module) -> dict[str, float]:
    """What a user computes by hand: the norm over each module's own parameters' .grad."""
    grads: dict[str, list[torch.Tensor]] = {}
    for name, p in model.named_parameters():
        if p.grad is not None:
            grads.setdefault(owner_of(name), []).append(p.grad.flatten())
    return {m: float(torch.linalg.vector_norm(torch.cat(g))) for m, g in grads.items()}


def plain_run(build: Build, steps: int) -> list[dict[str, object]]:
    """The loop without gradviz: per step the loss, each p.grad.norm() and module norm."""
    model, opt, loss_of = build()
    rows = []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_of()
        loss.backward()
        rows.append(
            {
                "loss": float(loss.detach()),
                "params": {n: float(p.grad.norm()) for n, p in model.named_parameters()},  # type: ignore[union-attr]
                "modules": module_norms(model),
            }
        )
        opt.step()
    return rows


def watched_run(build: Build, steps: int) -> gradviz.TrainingRun:
    model, opt, loss_of = build()
    with gradviz.watch_training(model, opt) as run:
        for _ in range(steps):
            opt.zero_grad()
            loss_of().backward()
            opt.step()
    return run


def onsets(rows: list[dict[str, object]], crossed: Callable[[float], bool]) -> dict[str, int]:
    found: dict[str, int] = {}
    for step, row in enumerate(rows):
        for module, norm in row["modules"].items():  # type: ignore[attr-defined]
            if module not in found and crossed(norm):
                found[module] = step
    return found


def clear_of(rows: list[dict[str, object]], threshold: float) -> bool:
    """No module norm within rounding of the threshold, so both sides must agree."""
    return all(
        not math.isclose(n, threshold, rel_tol=1e-5)
        for row in rows
        for n in row["modules"].values()  # type: ignore[attr-defined]
    )


# -- a network that diverges ------------------------------------------------------------------
def diverging() -> tuple[nn.Module, torch.optim.Optimizer, Callable[[], torch.Tensor]]:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1)
    )
    x, y = torch.randn(64, 4), torch.randn(64, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1.5)
    return model, opt, lambda: ((model(x) - y) ** 2).mean()


def test_a_diverging_network_is_marked_where_the_plain_loop_finds_nan() -> None:
    rows = plain_run(diverging, 40)
    expected = next(
        step
        for step, row in enumerate(rows)
        if not math.isfinite(row["loss"])  # type: ignore[arg-type]
        or not all(math.isfinite(v) for v in row["params"].values())  # type: ignore[attr-defined]
    )
    assert expected > 2  # it trains for a while before it blows up
    bad = [n for n, v in rows[expected]["params"].items() if not math.isfinite(v)]  # type: ignore[attr-defined]

    run = watched_run(diverging, 40)
    found = run.first_nonfinite()
    assert found is not None
    assert found.step == expected
    assert list(found.params) == bad
    assert found.loss_nonfinite == (not math.isfinite(rows[expected]["loss"]))  # type: ignore[arg-type]
    assert list(found.modules) == list(dict.fromkeys(owner_of(n) for n in bad))
    # before it, every stored norm is the plain loop's
    for step in range(expected):
        for name, value in rows[step]["params"].items():  # type: ignore[attr-defined]
            assert run.grad_norm(name)[step] == value
    exploding = run.exploding(1e3)
    assert exploding and {m: o.step for m, o in exploding.items()} == onsets(
        rows, lambda n: n > 1e3
    )


# -- vanishing gradients --------------------------------------------------------------------
def deep_sigmoid() -> tuple[nn.Module, torch.optim.Optimizer, Callable[[], torch.Tensor]]:
    torch.manual_seed(1)
    layers: list[nn.Module] = []
    for _ in range(6):
        layers += [nn.Linear(16, 16), nn.Sigmoid()]
    model = nn.Sequential(*layers, nn.Linear(16, 1))
    x, y = torch.randn(32, 16), torch.randn(32, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    return model, opt, lambda: ((model(x) - y) ** 2).mean()


def test_vanishing_onsets_per_module_are_the_plain_loops() -> None:
    threshold = 1e-6
    rows = plain_run(deep_sigmoid, 30)
    assert clear_of(rows, threshold)
    expected = onsets(rows, lambda n: n < threshold)
    # healthy at first, the first layer's gradient vanishes once the sigmoids saturate
    assert rows[0]["modules"]["0"] > threshold and expected["0"] > 0  # type: ignore[index]
    run = watched_run(deep_sigmoid, 30)
    assert {m: o.step for m, o in run.vanishing(threshold).items()} == expected
    for module, onset in run.vanishing(threshold).items():
        assert onset.norm == pytest.approx(rows[onset.step]["modules"][module], rel=1e-6)  # type: ignore[index]
    for step, row in enumerate(rows):
        for name, value in row["params"].items():  # type: ignore[attr-defined]
            assert run.grad_norm(name)[step] == value


# -- a transformer, with and without warm-up and clipping -------------------------------------
class TinyTransformer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, batch_first=True)
        self.head = nn.Linear(16, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.block(x)).mean(dim=1)


@pytest.mark.parametrize("warmup", [False, True], ids=["constant", "warmup"])
@pytest.mark.parametrize("clip", [None, 0.5], ids=["noclip", "clip"])
def test_a_transformer_with_and_without_warmup_and_clipping(
    warmup: bool, clip: float | None
) -> None:
    torch.manual_seed(2)
    model = TinyTransformer()
    x, y = torch.randn(8, 5, 16), torch.randn(8, 1) * 10
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    schedule = (
        torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 5)) if warmup else None
    )
    seen: list[dict[str, object]] = []
    with gradviz.watch_training(model, opt, keep_steps=[3]) as run:
        for _ in range(10):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            raw = {n: float(torch.linalg.vector_norm(p.grad)) for n, p in model.named_parameters()}  # type: ignore[arg-type]
            total = None
            if clip is not None:
                total = float(nn.utils.clip_grad_norm_(model.parameters(), clip))
            before = {n: p.detach().clone() for n, p in model.named_parameters()}
            lr = opt.param_groups[0]["lr"]
            opt.step()
            if schedule is not None:
                schedule.step()
            seen.append(
                {
                    "loss": float(loss.detach()),
                    "raw": raw,
                    "total": total,
                    "lr": lr,
                    "update": {
                        n: float(torch.linalg.vector_norm(p.detach() - before[n]))
                        for n, p in model.named_parameters()
                    },
                }
            )
    assert len(run) == 10 and run.first_nonfinite() is None
    assert run.lr() == [row["lr"] for row in seen]
    if warmup:
        assert run.lr()[0] < run.lr()[4] == run.lr()[9]
    for step, row in enumerate(seen):
        assert run.loss(step) == row["loss"]
        for name, value in row["raw"].items():  # type: ignore[attr-defined]
            assert run.grad_norm(name)[step] == value  # the gradient before clipping
            assert run.update_norm(name)[step] == row["update"][name]  # type: ignore[index]
        if row["total"] is not None:
            norms = [run.grad_norm(n)[step] for n in run.params]
            whole = math.sqrt(math.fsum(v * v for v in norms))  # type: ignore[operator]
            assert whole == pytest.approx(row["total"], rel=1e-5)
    assert len(run.recording(3).steps) > 0
    modules = run.modules
    assert "block.self_attn" in modules and "block.linear1" in modules and "head" in modules
