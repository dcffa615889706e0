"""Big views are laid out without waiting out Graphviz's time budget and without straight
edges: views with no module boxes past ``LAYOUT_WORK`` go to gradviz's layered layout,
which routes each edge between the nodes of the layers it crosses and gives each
gradient label room of its own (never over a node or another label). The models are a
T5-shaped encoder-decoder and a UNet-shaped conv net (``tests.shaped_models``)."""

from __future__ import annotations

import re
import warnings
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path

import pytest
import torch

import gradviz
from gradviz.errors import GradvizWarning
from gradviz.model.recording import Recording
from gradviz.render import backend, layered, views
from gradviz.render.views import to_dot
from gradviz.render.watched import combined_sides
from gradviz.replay.frames import replay_options
from gradviz.replay.modules import view_options
from gradviz.stepper.page import unpack_state
from tests.support.shaped_models import make_t5, make_unet

pytestmark = pytest.mark.needs_dot

_SVG = "{http://www.w3.org/2000/svg}"
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")
Box = tuple[float, float, float, float]


@cache
def recorded(name: str) -> Recording:
    model, loss = {"t5": make_t5, "unet": make_unet}[name]()
    with gradviz.watch(model) as w:
        value = loss()
    return w.record(value)


def view_dot(name: str, view: str) -> str:
    """The DOT a saved page lays out for ``view`` (every gradient label included)."""
    rec = recorded(name)
    return to_dot(rec.graph, replay_options(rec, **view_options(view)))


def _numbers(text: str) -> list[float]:
    return [float(n) for n in _NUMBER.findall(text)]


def _bounds(points: list[float]) -> Box:
    xs, ys = points[0::2], points[1::2]
    return min(xs), min(ys), max(xs), max(ys)


def _curve_points(d: str) -> list[tuple[float, float]]:
    """Points along an SVG path of Graphviz's (M x,y C x,y x,y x,y ...), 8 per Bézier."""
    values = _numbers(d)
    points = list(zip(values[0::2], values[1::2], strict=True))
    along = [points[0]]
    for i in range(1, len(points) - 2, 3):
        (x0, y0), (x1, y1), (x2, y2), (x3, y3) = points[i - 1 : i + 3]
        for k in range(1, 9):
            t = k / 8
            a, b, c, e = (1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t**2, t**3
            along.append((a * x0 + b * x1 + c * x2 + e * x3, a * y0 + b * y1 + c * y2 + e * y3))
    return along


def drawing(
    svg: str,
) -> tuple[dict[str, Box], list[tuple[str, str, list[tuple[float, float]], list[Box]]]]:
    """Each node's box by DOT name, and each edge: its ends, points along it, its labels'
    boxes (from the text's anchor and size: 6 points a character at 10 pt)."""
    root = ET.fromstring(svg)
    nodes: dict[str, Box] = {}
    edges = []
    for group in root.iter(f"{_SVG}g"):
        kind = group.get("class", "")
        title = group.findtext(f"{_SVG}title") or ""
        if kind.startswith("node"):
            shape = group.find(f"{_SVG}polygon")
            if shape is None:
                shape = group.find(f"{_SVG}path")
            if shape is not None:
                nodes[title] = _bounds(_numbers(shape.get("points") or shape.get("d") or ""))
        elif kind.startswith("edge"):
            path = group.find(f"{_SVG}path")
            src, _, dst = title.partition("->")
            labels = []
            for text in group.iter(f"{_SVG}text"):
                x, y = float(text.get("x", 0)), float(text.get("y", 0))
                width = 6.0 * len("".join(text.itertext()))
                left = {"middle": x - width / 2, "end": x - width}.get(
                    text.get("text-anchor", ""), x
                )
                labels.append((left, y - 10.0, left + width, y + 2.0))
            along = [] if path is None else _curve_points(path.get("d", ""))
            edges.append((src.strip(), dst.strip(), along, labels))
    return nodes, edges


def _inside(point: tuple[float, float], box: Box, margin: float = 2.0) -> bool:
    x, y = point
    return box[0] + margin < x < box[2] - margin and box[1] + margin < y < box[3] - margin


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def edges_through_nodes(svg: str) -> list[tuple[str, str, str]]:
    """Each (tail, head, node) where an edge runs through a node other than its ends."""
    nodes, edges = drawing(svg)
    assert nodes and edges
    through = []
    for src, dst, along, _ in edges:
        if not along:
            continue
        span = _bounds([v for point in along for v in point])
        for name, box in nodes.items():
            near = name not in (src, dst) and _overlap(span, box)
            if near and any(_inside(p, box) for p in along):
                through.append((src, dst, name))
    return through


def assert_readable(svg: str) -> None:
    """No edge runs through a node other than its own ends; no label lies on a node or on
    another edge's label."""
    assert edges_through_nodes(svg) == []
    nodes, edges = drawing(svg)
    labels = [(f"{src}->{dst}", box) for src, dst, _, boxes in edges for box in boxes]
    assert len(labels) > len(nodes) // 2  # the replay's gradient labels are drawn
    on_nodes = [
        (edge, name) for edge, box in labels for name, n in nodes.items() if _overlap(box, n)
    ]
    assert on_nodes == []
    rows = sorted(labels, key=lambda item: item[1][0])
    on_labels = [
        (a, b)
        for i, (a, box) in enumerate(rows)
        for b, other in rows[i + 1 :]
        if other[0] < box[2] and a != b and _overlap(box, other)
    ]
    assert on_labels == []


@pytest.mark.slow
def test_the_t5_backward_view_is_laid_out_at_once_routed_and_readable() -> None:
    dot = view_dot("t5", "backward")
    cost = layered.estimate(dot)
    assert cost.flat and backend.layout_plan(cost) == "layered"  # dot would need ~20 s CPU
    with warnings.catch_warnings():
        warnings.simplefilter("error", GradvizWarning)  # nothing lost: no warning
        svg = backend.run_dot(dot).decode("utf-8")
    assert_readable(svg)


def test_the_layered_layout_routes_edges_around_nodes_and_labels() -> None:
    """Forced onto a smaller view (the UNet's, skip connections and all), the layered
    layout still draws what dot would: no edge through a node, no label on another."""
    svg = backend.run_graphviz(layered.place(view_dot("unet", "backward")), "svg", "nop", None)
    assert_readable(svg.decode("utf-8"))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["t5", "unet"])
def test_saving_a_big_model_waits_out_no_budget(name: str, tmp_path: Path) -> None:
    """Every view of the page: no timed-out dot, no view left out or drawn in straight
    lines (the module-box views of T5 still get dot's fewer optimisation rounds)."""
    rec = recorded(name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", GradvizWarning)
        page = rec.save(tmp_path / "page.html").read_text(encoding="utf-8")
    told = [str(w.message) for w in caught if issubclass(w.category, GradvizWarning)]
    assert [t for t in told if "fewer optimisation rounds" not in t] == []
    assert "combined" in unpack_state(page)["svgs"]


def test_the_fallback_advises_fold_only_where_something_folds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rec = recorded("t5")  # twelve blocks of two kinds: fold=True folds them
    t5_dot = to_dot(rec.graph)
    assert layered.FOLDABLE in t5_dot
    monkeypatch.setattr(views, "FOLD_HINT_NODES", (0, 20_000))
    x = torch.ones(3, requires_grad=True)
    few = to_dot(gradviz.trace((x * 2 + 1).sum()))  # nothing repeats: nothing to fold
    assert layered.FOLDABLE not in few
    cost = layered.estimate(view_dot("t5", "modules"))
    told = backend._fallback_note(cost, "too much", t5_dot)
    assert "fold=True" in told and "188 module boxes" in told
    assert "fold=True" not in backend._fallback_note(cost, "too much", few)


def unrolled_gru_dot(steps: int) -> str:
    """An unrolled GRU cell's backward view with its gradient labels: each weight's
    gradient gathers one edge from every step."""
    from tests.support.workloads import GRUUnrolled

    torch.manual_seed(0)
    model = GRUUnrolled(steps=steps)
    with gradviz.watch(model) as w:
        loss = model(torch.randn(2, steps, 16)).sum()
    rec = w.record(loss)
    return to_dot(rec.graph, replay_options(rec, **view_options("backward")))


def _path_numbers(placed: str) -> int:
    """How many coordinates the edges' routes hold: the drawing's size."""
    return sum(
        len(_NUMBER.findall(line.partition('pos="')[2].partition('"')[0]))
        for line in placed.splitlines()
        if " -> " in line
    )


def test_the_edges_a_shared_weight_gathers_share_one_trunk() -> None:
    """Twice the steps, about twice the drawing: one trunk per shared weight, not a chain
    of virtual nodes per edge (whose size grows with the square of the steps). No edge
    crosses a node."""
    short, long = layered.place(unrolled_gru_dot(40)), layered.place(unrolled_gru_dot(80))
    assert _path_numbers(long) < 2.6 * _path_numbers(short)
    svg = backend.run_graphviz(long, "svg", "nop", None).decode("utf-8")
    assert edges_through_nodes(svg) == []


def test_drawing_given_positions_gets_a_limit_that_grows_with_the_graph(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Drawing a laid-out graph (``nop``) searches nothing: its time grows with the graph,
    and a 100,000-node page's drawing ran past the fixed 60 s limit. Its limit grows too."""
    nodes = 40_000
    chain = "\n".join(f"  n{i} [label=x];" for i in range(nodes))
    links = "\n".join(f"  n{i} -> n{i + 1};" for i in range(nodes - 1))
    dot = f"digraph gradviz {{\n{chain}\n{links}\n}}\n"
    limits: list[tuple[str, float | None]] = []

    def fake_run(text: str, fmt: str, engine: str, seconds: float | None = None) -> bytes:
        limits.append((engine, seconds))
        return b"<svg></svg>"

    monkeypatch.setattr(backend, "run_graphviz", fake_run)
    monkeypatch.setattr(layered, "place", lambda text: text)
    backend._laid_out(dot, "dot", backend.LAYOUT_SECONDS)
    assert limits[-1] == ("nop", backend.drawing_seconds(nodes))
    assert backend.drawing_seconds(nodes) > backend.DEFAULT_SECONDS
    assert backend.drawing_seconds(50) == backend.DEFAULT_SECONDS


class _NormEveryLayer(torch.nn.Module):
    """A deep, thin residual net whose every layer casts its input to the dtype it already
    has, as Llama's RMSNorm does: ``to`` then returns the same tensor, so the forward
    drawing has an edge from the tensor to the op and one back."""

    def __init__(self, layers: int) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            residual = x
            x = x.to(torch.float32)
            x = torch.tanh(layer(x)) + residual
        return x.sum()


def forward_side_dot(layers: int) -> str:
    torch.manual_seed(0)
    model = _NormEveryLayer(layers)
    with gradviz.watch(model) as w:
        loss = model(torch.randn(2, 4))
    rec = w.record(loss)
    options = replay_options(rec, **view_options("combined"))
    return combined_sides(rec.graph, options).forward


def _y_of(placed: str) -> dict[str, float]:
    """Each placed node's y (``pos="x,y"``), by name."""
    found = re.findall(r'^\s*(\w+) \[pos="[-\d.]+,([-\d.]+)"', placed, re.MULTILINE)
    return {name: float(y) for name, y in found}


def _longest_edge(dot: str) -> float:
    """The greatest height an edge of the placed drawing spans."""
    y = _y_of(layered.place(dot))
    ends = re.findall(r"^\s*(\w+) -> (\w+)", dot, re.MULTILINE)
    return max(abs(y[src] - y[dst]) for src, dst in ends if src in y and dst in y)


def test_an_op_that_returns_its_input_keeps_every_edge_short() -> None:
    """The tensor-to-op-and-back cycle is broken where Graphviz breaks it: the tensor sits
    just above the op. Before, every node on or after such a cycle was stacked below the
    rest, one per layer, and edges crossed half the drawing (the 24-layer Llama's forward
    side took 31 s to place): the longest edge grew with the depth."""
    short, deep = forward_side_dot(10), forward_side_dot(40)
    assert "<B>to</B>" in short  # the cycle is drawn
    assert _longest_edge(deep) <= 1.01 * _longest_edge(short)
