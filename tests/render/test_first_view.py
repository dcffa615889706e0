"""The first view of a watched model is chosen by what it shows: some 15 to 60 things
(module boxes and ops outside them), no box holding more than half of the backward nodes
unless the model is one block, wrappers opened, a list of blocks drawn as the list; the
page opens where the backward pass starts, and ``collapse=`` chooses other boxes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

import gradviz
from gradviz.errors import GradvizError
from gradviz.model.recording import Recording
from gradviz.render.frontier import MAX_THINGS, MIN_THINGS, auto_frontier
from gradviz.render.watched import collapsed_members
from gradviz.replay.modules import view_options
from gradviz.stepper.page import opening_step, stepper_payload, unpack_state
from tests.support.shaped_models import MODELS
from tests.support.zoo import ZOO

pytestmark = pytest.mark.needs_dot

_NODE = re.compile(r'^\s*\w+ \[id="([^"]+)"')


def drawn_things(dot: str) -> list[str]:
    """The ids of the nodes a view's DOT draws (module boxes, ops, tensors), legend aside."""
    return [
        m.group(1)
        for line in dot.splitlines()
        if (m := _NODE.match(line)) and "_legend" not in m.group(1)
    ]


_RECORDED: dict[str, tuple[Recording, list[torch.Tensor | None], list[torch.Tensor | None]]] = {}


def recorded(name: str) -> tuple[Recording, list[torch.Tensor | None], list[torch.Tensor | None]]:
    """The watched recording, its parameters' gradients and those of a plain run."""
    if name not in _RECORDED:
        model, loss = MODELS[name]()
        loss().backward()
        plain = [p.grad for p in model.parameters()]
        model, loss = MODELS[name]()
        with gradviz.watch(model) as w:
            value = loss()
        rec = w.record(value)
        _RECORDED[name] = (rec, [p.grad for p in model.parameters()], plain)
    return _RECORDED[name]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_first_view_shows_the_models_structure(name: str) -> None:
    rec, grads, plain = recorded(name)
    assert len(grads) == len(plain)
    for got, want in zip(grads, plain, strict=True):  # gradviz changed no gradient
        assert got is not None and want is not None and torch.equal(got, want)
    state = stepper_payload(rec, lazy=True)  # only the view it opens on is laid out
    assert state["view"] == "collapsed-auto" and state["start"] == 0  # the seed, at the loss
    graph = rec.graph
    forward = graph.forward
    assert forward is not None
    things = drawn_things(graph.to_dot(**view_options("collapsed-auto")))
    boxes = collapsed_members(graph, "auto")
    biggest = max(len(members) for members in boxes.values())
    if name == "one_block":  # no child module: the model itself is the one box
        (only,) = boxes
        assert forward.modules[only].parent is None and len(things) < MIN_THINGS
        return
    assert MIN_THINGS <= len(things) <= MAX_THINGS, len(things)
    assert biggest * 2 <= len(graph.nodes), (biggest, len(graph.nodes))
    paths = {forward.modules[m].path for m in boxes}
    # no box is a wrapper around one child module (bert, bert.encoder): those opened
    assert not paths & {"bert", "bert.encoder", "model", "encoder"}


def test_the_depth_one_view_is_what_it_replaces() -> None:
    """The view the page opened on before: one box holds almost all of BERT."""
    rec, _, _ = recorded("bert")
    depth_one = collapsed_members(rec.graph, 1)
    assert max(len(m) for m in depth_one.values()) * 2 > len(rec.graph.nodes)
    assert auto_frontier(rec.graph) != frozenset(depth_one)


def test_lists_of_identical_blocks_read_as_the_list() -> None:
    rec, _, _ = recorded("vit")
    forward = rec.graph.forward
    assert forward is not None
    paths = sorted(forward.modules[m].path for m in auto_frontier(rec.graph))
    blocks = [p for p in paths if p.startswith("encoder.")]
    assert blocks == [f"encoder.layer.{i}" for i in range(6)]


def test_collapse_chooses_the_first_view(tmp_path: Path) -> None:
    rec, _, _ = recorded("bert")
    views = ["collapsed-auto", "collapsed-2"]
    page = rec.save(tmp_path / "depth.html", collapse=2, views=views).read_text("utf-8")
    assert unpack_state(page)["view"] == "collapsed-2"
    assert unpack_state(page)["step"] == 0  # the seed, not the first forward op
    named = ["bert.encoder", "bert.pooler"]
    stepper = gradviz.Stepper(rec, collapse=named)
    assert stepper.view == "collapsed-auto"
    opens = stepper.data["modules"]["opens"]["collapsed-auto"]
    assert sorted(info["module"].split(" ")[0] for info in opens.values()) == named
    boxes = collapsed_members(rec.graph, tuple(named))
    assert {f"{stepper.data['prefix']}_bm{m}" for m in boxes} == set(opens)
    drawn = set(drawn_things(rec.graph.to_dot(collapse=named)))  # save(x.svg) takes it too
    assert set(opens) <= drawn
    with pytest.raises(GradvizError, match="no module call named"):
        gradviz.Stepper(rec, collapse=["bert.nowhere"])
    with pytest.raises(GradvizError, match="collapse="):
        gradviz.Stepper(rec, collapse=-1)


def test_small_watched_graphs_open_whole() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    with gradviz.watch(model) as w:
        loss = model(torch.randn(3, 4)).square().mean()
    rec = w.record(loss)
    assert auto_frontier(rec.graph) == frozenset()
    assert stepper_payload(rec, lazy=True)["view"] == "backward"


def test_the_page_opens_at_the_seed_unless_the_first_forward_frame_shows_most() -> None:
    rec, _, _ = recorded("deep_mlp")
    first = -len(rec.forward_ops)
    assert first < 0
    assert opening_step(rec, {"a": first, "b": first, "c": -1}) == first
    assert opening_step(rec, {"a": first, "b": first + 1, "c": -1}) == 0  # one of three
    payload = stepper_payload(rec, lazy=True)
    born = payload["data"]["schedule"]["born"][payload["view"]]
    assert sum(at == first for at in born.values()) * 2 < len(born)  # nearly empty at first
    assert payload["start"] == 0


def test_a_small_model_opens_at_its_first_forward_frame_that_draws_something() -> None:
    """The LSTM language model slices its token ids first: that frame draws nothing (no
    input needs a gradient), so the page opens where the first element appears."""
    (entry,) = [e for e in ZOO if e.name == "lstm-lm"]
    torch.manual_seed(0)
    model, loss_of = entry.build()
    with gradviz.watch(model) as w:
        loss = loss_of()
    rec = w.record(loss)
    payload = stepper_payload(rec)
    born = payload["data"]["schedule"]["born"][payload["view"]]
    first = -len(rec.forward_ops)
    assert not any(at == first for at in born.values())  # the first frame draws nothing
    assert payload["start"] == min(born.values()) < 0


def test_a_graph_that_reads_whole_opens_at_its_first_forward_frame() -> None:
    """A lesson's story starts with its forward pass: a small watched graph opens there."""
    a = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(3.0, requires_grad=True)
    with gradviz.watch() as w:
        loss = (a * b + a).tanh()
    rec = w.record(loss)
    assert len(rec.graph.nodes) <= 60 and rec.forward_ops
    assert stepper_payload(rec)["start"] == -len(rec.forward_ops)
