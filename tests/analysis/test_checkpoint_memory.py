"""Memory under ``torch.utils.checkpoint``: the checkpointed segment keeps only its
inputs and backward recomputes the rest; with ``use_reentrant=True`` one node stands for the
whole segment. Saved bytes are measured
here independently with ``torch.autograd.graph.saved_tensors_hooks``."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.utils.checkpoint import checkpoint

import gradviz
from gradviz.analysis.memory import format_bytes
from gradviz.replay.overlays import memory_data


class Model(torch.nn.Module):
    def __init__(self, checkpointed: bool, reentrant: bool = False) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.checkpointed = checkpointed
        self.reentrant = reentrant
        self.calls = 0
        self.segment = torch.nn.Sequential(
            torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.Tanh()
        )
        self.head = torch.nn.Linear(64, 1)

    def inner(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        out: torch.Tensor = self.segment(x)
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.checkpointed:
            return self.head(self.inner(x)).sum()
        h = checkpoint(self.inner, x, use_reentrant=self.reentrant)
        return self.head(h).sum()


def measured_forward(model: Model, x: torch.Tensor) -> tuple[torch.Tensor, int]:
    """The loss and the bytes of every distinct storage autograd saved for it (the pack
    hook sees what the graph keeps; checkpoint's own hooks hide the segment's tensors)."""
    storages: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        loss = model(x)
    return loss, sum(storages.values())


@pytest.mark.parametrize("reentrant", [False, True])
def test_saved_bytes_with_and_without_checkpointing_match_pytorch(reentrant: bool) -> None:
    x = torch.randn(32, 16, requires_grad=reentrant)  # reentrant needs an input with grad
    totals = {}
    for checkpointed in (False, True):
        loss, held = measured_forward(Model(checkpointed, reentrant), x)
        memory = gradviz.record(loss).memory()
        assert memory.saved_total == held, checkpointed
        totals[checkpointed] = held
    assert totals[True] < totals[False]  # what checkpointing is for


def test_a_reentrant_segment_is_one_node_named_and_explained() -> None:
    x = torch.randn(32, 16, requires_grad=True)
    model = Model(True, reentrant=True)
    loss = model(x)
    rec = gradviz.record(loss, params=model)
    (node,) = rec.graph.checkpointed
    assert rec.graph.node(node).type_name == "CheckpointFunctionBackward"
    memory = rec.memory()
    assert memory.reentrant == (node,)
    assert memory.node_bytes[node] == x.numel() * x.element_size()  # it saved its input
    text = memory.explain_checkpointing()
    assert "use_reentrant=True" in text and "nodes ran inside" not in text
    assert format_bytes(x.numel() * x.element_size()) in text
    data = memory_data(rec)
    assert data is not None and data["ckpt_whole"] == [node]
    plain = Model(True, reentrant=True)
    plain(x).backward()
    assert model.calls == plain.calls == 2  # the forward and backward's rerun, no third
    for a, b in zip(plain.parameters(), model.parameters(), strict=True):
        assert a.grad is not None and b.grad is not None
        assert torch.equal(a.grad, b.grad)  # bitwise, as without gradviz


def test_the_checkpointed_nodes_are_named_and_explained() -> None:
    x = torch.randn(32, 16)
    model = Model(True)
    loss = model(x)
    rec = gradviz.record(loss, params=model)
    types = [rec.graph.node(node).type_name for node in rec.graph.checkpointed]
    assert sorted(types) == ["AddmmBackward0", "AddmmBackward0", "TanhBackward0", "TanhBackward0"]
    memory = rec.memory()
    text = memory.explain_checkpointing()
    assert "4 nodes ran inside torch.utils.checkpoint" in text and "recompute" in text
    assert format_bytes(x.numel() * x.element_size()) in text  # its input: all it keeps
    data = memory_data(rec)
    assert data is not None and sorted(data["ckpt"]) == sorted(rec.graph.checkpointed)
    plain = gradviz.record(Model(False)(x)).memory()
    assert plain.explain_checkpointing() == "" and plain.checkpointed == ()


def test_tracing_does_not_rerun_the_checkpointed_forward() -> None:
    x = torch.randn(32, 16)
    plain_model, recorded_model = Model(True), Model(True)
    plain_model(x).backward()
    assert plain_model.calls == 2  # forward, and backward's recomputation
    gradviz.record(recorded_model(x))
    assert recorded_model.calls == 2  # gradviz read no placeholder: no third run
    for a, b in zip(plain_model.parameters(), recorded_model.parameters(), strict=True):
        assert a.grad is not None and b.grad is not None
        assert torch.equal(a.grad, b.grad)  # bitwise, as without gradviz


@pytest.mark.browser
@pytest.mark.needs_dot
@pytest.mark.parametrize("reentrant", [False, True])
def test_the_memory_panel_says_what_checkpointing_recomputes(
    tmp_path: Path, reentrant: bool
) -> None:
    from tests.support.browser import chromium, open_local
    from tests.support.person import click, move_slider_to

    x = torch.randn(32, 16, requires_grad=reentrant)
    model = Model(True, reentrant)
    rec = gradviz.record(model(x), params=model)
    node = rec.graph.checkpointed[0]
    step = rec.step_for(node)
    assert step is not None
    path = rec.save(tmp_path / "ckpt.html")
    with chromium(tmp_path / "profile") as context:
        page, _, errors = open_local(context, path)
        page.wait_for_selector(".gv-stepper")
        root = page.query_selector(".gv-stepper")
        click(page, root.query_selector(".gv-memory-btn"))
        move_slider_to(page, root, step.index)
        panel = root.query_selector(".gv-memory").text_content()
        if reentrant:
            assert "its segment's inputs" in panel and "ran without a graph" in panel
            assert "1 node(s) (marked ⟳) each stand for a whole segment" in panel
        else:
            assert "checkpointed" in panel and "reran this segment's forward" in panel
            assert "4 nodes ran inside torch.utils.checkpoint" in panel
        badges = root.evaluate(
            "(r) => [...r.querySelectorAll('.gv-mem-ckpt-badge')].map(b => b.textContent)"
        )
        inputs = format_bytes(x.numel() * x.element_size())
        assert badges and all(b == f"⟳ inputs {inputs}" for b in badges)
        page.screenshot(path=str(tmp_path / "checkpoint-memory.png"))
        assert errors == []
