"""Big graphs and cheap recording: layout fallback, folding, memory budget, single copies.

No timings here (they belong to ``make bench``); these tests check behaviour only.
"""

from __future__ import annotations

import re

import pytest
import torch

import gradviz
from gradviz import GradvizWarning
from gradviz.render import layered as biglayout
from gradviz.render.backend import run_dot
from gradviz.render.fold import FoldedNode, fold_graph
from tests.support import svg_ids


def chain(ops: int) -> torch.Tensor:
    """About ``ops`` backward nodes: a residual chain with a weight every few steps."""
    weights = [torch.full((3,), 0.5, requires_grad=True) for _ in range(ops // 40 + 1)]
    h = torch.ones(3, requires_grad=True) * 0.1
    for i in range(ops // 4):
        h = 0.5 * h + torch.tanh(h * weights[i // 10])
    return h.sum()


def mlp_loss(layers: int = 6) -> tuple[torch.Tensor, torch.nn.Module]:
    torch.manual_seed(0)
    parts: list[torch.nn.Module] = []
    for _ in range(layers):
        parts += [torch.nn.Linear(4, 4), torch.nn.ReLU()]
    model = torch.nn.Sequential(*parts)
    return model(torch.randn(2, 4)).square().mean(), model


# -- the layout fallback -------------------------------------------------------------------
@pytest.mark.needs_dot
def test_small_graphs_keep_dot_and_do_not_warn() -> None:
    graph = gradviz.trace(chain(40))
    dot = graph.to_dot()
    assert biglayout.count_nodes(dot) <= biglayout.LARGE_GRAPH_NODES
    svg = run_dot(dot)  # a GradvizWarning would be an error in this suite
    assert svg_ids(svg) >= {f"{graph.prefix}_{node.id}" for node in graph.nodes}


def test_fallback_places_every_node_and_keeps_the_statements() -> None:
    dot = gradviz.trace(chain(200)).to_dot()
    placed = biglayout.place(dot)
    assert "splines=false" in placed
    node_lines = [line for line in placed.splitlines() if "pos=" in line and " -> " not in line]
    assert len(node_lines) == biglayout.count_nodes(dot)
    edge_lines = [line for line in placed.splitlines() if " -> " in line]
    assert all('pos="e,' in line for line in edge_lines if "legend" not in line)  # routed
    # only pos= was added: removing it gives back the original statements
    stripped = "\n".join(
        line.split('pos="', 1)[0] + line.split('" ', 1)[1] if 'pos="' in line else line
        for line in placed.splitlines()
        if "splines=false" not in line
    )
    assert stripped + "\n" == dot
    # every edge points down: layers follow the edges
    y = {}
    for line in node_lines:
        name = line.split()[0]
        y[name] = float(line.split('pos="', 1)[1].split('"', 1)[0].split(",")[1])
    for line in placed.splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[1] == "->" and parts[0] in y and parts[2] in y:
            assert y[parts[2]] < y[parts[0]]


@pytest.mark.needs_dot
def test_fallback_engages_above_the_threshold_silently_without_boxes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    graph = gradviz.trace(chain(120))
    monkeypatch.setattr(biglayout, "LARGE_GRAPH_NODES", 50)
    svg = graph.svg()  # drawn whole (no module boxes to lose): nothing to warn about
    ids = svg_ids(svg)
    assert all(f"{graph.prefix}_{node.id}" in ids for node in graph.nodes)


@pytest.mark.needs_dot
@pytest.mark.slow
def test_ten_thousand_nodes_render_to_well_formed_svg_with_every_id() -> None:
    graph = gradviz.trace(chain(10_000))
    assert len(graph.nodes) >= 10_000
    svg = graph.svg()  # the layered layout, silently: it draws the graph whole
    ids = svg_ids(svg)  # parses: well-formed XML
    p = graph.prefix
    assert all(f"{p}_{node.id}" in ids for node in graph.nodes)
    assert all(f"{p}_e_{edge.src}_{edge.slot}" in ids for edge in graph.edges)


# -- folding ---------------------------------------------------------------------------------
def test_fold_collapses_identical_layers_into_one_box() -> None:
    loss, _ = mlp_loss(6)
    graph = gradviz.trace(loss)
    folded = fold_graph(graph)
    boxes = [n for n in folded.nodes if isinstance(n, FoldedNode)]
    assert len(boxes) == 1
    box = boxes[0]
    assert box.repeats == 5  # six Linear layers: the first five repeat (Addmm, Relu)
    assert box.type_name == "5 × block"
    assert "AddmmBackward0" in box.contents and "ReluBackward0" in box.contents
    # every original node is either kept or inside exactly one box
    kept = {n.id for n in folded.nodes if not isinstance(n, FoldedNode)}
    assert kept.isdisjoint(box.members)
    assert kept | set(box.members) == {n.id for n in graph.nodes}
    # edges stay connected: the box has one way in and one way out
    assert [e.src for e in folded.in_edges(box.id)]
    assert all(e.dst in {n.id for n in folded.nodes} for e in folded.out_edges(box.id))
    assert len(graph.nodes) == len(gradviz.trace(loss).nodes)  # the input is untouched


def _boxes(dot: str) -> int:
    """How many backward-node boxes a DOT draws: its node statements named ``n3`` or
    ``fold0`` (their class ``gv_node`` is the default of their block, not on each line)."""
    return len(re.findall(r"^  (?:n|fold)\d+ \[", dot, re.MULTILINE))


def test_fold_is_a_render_option_and_leaves_unrepeated_graphs_alone() -> None:
    loss, _ = mlp_loss(6)
    graph = gradviz.trace(loss)
    dot = graph.to_dot(fold=True)
    assert "5 × block" in dot and "gv_fold" in dot
    assert _boxes(dot) < _boxes(graph.to_dot())
    a = torch.tensor(2.0, requires_grad=True)
    small = gradviz.trace(a * 3 + a)
    with pytest.warns(GradvizWarning, match="folded nothing: the graph has 3 nodes"):
        assert small.to_dot(fold=True) == small.to_dot()
    with pytest.raises(ValueError, match="backward"):
        graph.to_dot(fold=True, view="forward")


def test_fold_with_more_repeats_required_folds_less() -> None:
    loss, _ = mlp_loss(3)
    graph = gradviz.trace(loss)
    assert any(isinstance(n, FoldedNode) for n in fold_graph(graph, 2).nodes)
    assert fold_graph(graph, 5) is graph


# -- recording memory ------------------------------------------------------------------------
def test_keep_all_warns_before_passing_the_memory_budget() -> None:
    loss, _ = mlp_loss(6)
    with pytest.warns(GradvizWarning, match="memory_budget"):
        gradviz.record(loss, keep="all", memory_budget=200)


def test_no_warning_within_budget_or_with_summaries() -> None:
    loss, _ = mlp_loss(6)
    gradviz.record(loss, keep="all")  # default budget: 1 GiB, far away
    loss, _ = mlp_loss(6)
    gradviz.record(loss, keep="summary", memory_budget=1)  # summaries hold no copies
    loss, _ = mlp_loss(6)
    gradviz.record(loss, keep="all", memory_budget=None)


def test_each_gradient_is_stored_once() -> None:
    loss, model = mlp_loss(4)
    recording = gradviz.record(loss, keep="all")
    graph = recording.graph
    # what a producer sent on an edge is the very object its only consumer received
    shared = 0
    for step in recording.steps:
        for edge in graph.out_edges(step.node_id):
            sent = step.grad_inputs[edge.slot]
            if edge.dst is None or sent is None:
                continue
            consumer = recording.step_for(edge.dst)
            assert consumer is not None
            if len(graph.in_edges(edge.dst)) == 1:
                assert consumer.grad_outputs[edge.input_nr] is sent
                shared += 1
    assert shared > 10
    # a leaf's first .grad is the copy of what reached its AccumulateGrad
    for step in recording.steps:
        if step.type_name == "AccumulateGrad":
            assert step.leaf_grad_after is step.grad_outputs[0]
    # every stored memory is held once: two stored tensors share memory only as views of one
    # gradient (TBackward's transpose of what it received, kept by reference)
    tensors = [
        v
        for s in recording.steps
        for v in (*s.grad_outputs, *s.grad_inputs, s.leaf_grad_after)
        if isinstance(v, torch.Tensor)
    ]
    by_memory: dict[int, set[tuple[int, int]]] = {}
    for t in {id(t): t for t in tensors if t.numel()}.values():
        by_memory.setdefault(t.data_ptr(), set()).add((t.numel(), t.untyped_storage().nbytes()))
    assert all(len(views) == 1 for views in by_memory.values())
    assert len(by_memory) < len({id(t) for t in tensors})  # the transposes share
    # and the values are still PyTorch's own
    for name, param in model.named_parameters():
        step = next(
            s
            for s in recording.steps
            if s.type_name == "AccumulateGrad"
            and s.node_id in {n.id for n in graph.nodes if n.leaf_tensor is param}
        )
        assert torch.equal(step.leaf_grad_after, param.grad), name  # type: ignore[arg-type]
    assert all(step.flow_ok for step in recording.steps)


def test_a_gradient_changed_by_a_hook_is_not_shared() -> None:
    def forward(x: torch.Tensor, hooked: bool) -> torch.Tensor:
        b = x * 3
        if hooked:
            b.register_hook(lambda g: g * 10)
        return (b * b).sum()

    a = torch.tensor([1.0, 2.0], requires_grad=True)
    recording = gradviz.record(forward(a, True), keep="all")
    plain = torch.tensor([1.0, 2.0], requires_grad=True)
    forward(plain, True).backward()
    assert torch.equal(a.grad, plain.grad)  # type: ignore[arg-type]
    # the hook's change is visible: the receiving step does not get the shared copy
    failed = [step for step in recording.steps if not step.flow_ok]
    assert [step.type_name for step in failed] == ["MulBackward0"]
    received = failed[0].grad_outputs[0]
    producer = recording.steps[1]
    assert all(received is not sent for sent in producer.grad_inputs)


def test_fold_folds_shared_weights_and_recurrent_cells() -> None:
    """A tied embedding (nanoGPT) and a GRU cell unrolled over 12 steps: the weight every
    block uses no longer stops the blocks from folding."""
    from tests.support.workloads import GPT, GRUUnrolled

    torch.manual_seed(0)
    gpt = GPT(vocab=64, d_model=16, layers=4, seq=8)
    gpt.head.weight = gpt.tokens.weight  # tied, as nanoGPT does
    tied = gradviz.trace(gpt(torch.randint(0, 64, (1, 8))).square().mean())
    folded = tied.to_dot(fold=True)
    assert "4 × block" in folded
    assert _boxes(folded) < _boxes(tied.to_dot()) / 4
    gru = gradviz.trace(GRUUnrolled()(torch.randn(2, 12, 16)).square().mean())
    dot = gru.to_dot(fold=True)
    assert re.search(r"1[0-2] × block", dot), "the 12 time steps fold"
    assert _boxes(dot) < _boxes(gru.to_dot()) / 3
    with pytest.warns(GradvizWarning, match="folded nothing"):
        gradviz.trace(torch.tensor(2.0, requires_grad=True) * 3).to_dot(fold=True)
