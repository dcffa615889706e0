"""A shared ``.json`` cannot inject DOT, SVG or script: the loader checks every field.

``Graph.from_json`` / ``from_dict`` accept only what gradviz writes: ids of gradviz's own
form, every reference resolved, every field of its type, range and enum. Anything else is
an ``InvalidInput`` naming the field. Behind the loader, the DOT writers refuse any id that
is not a plain identifier (a graph built by hand). The class of faults is covered by
walking every field of real graphs (with watch() data and module scopes) and by a
hypothesis fuzz from the loader through the DOT, the real ``dot``, the page and the widget.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gradviz
from gradviz import Edge, Graph, Node, Recording, Role, TensorRecord
from gradviz.errors import GradvizError, InvalidInput
from gradviz.render.backend import run_dot
from gradviz.stepper.page import replay_html, stepper_payload
from gradviz.teaching.lessons import lesson
from tests.support.inert import assert_inert_page, assert_inert_payload, assert_inert_svg

Path_ = tuple[str | int, ...]

# ids from the issue: a javascript: link on every element, a stylesheet processing
# instruction that makes a browser fetch a remote URL when the SVG is opened
CRAFTED_IDS = [
    'n0 [URL="javascript:alert(1)" target="_top"]; n0',
    'n0; graph [stylesheet="https://example.invalid/x.css"]; n0',
    "n0 -> n1",
    "n0}digraph{x",
    'n0"',
    "node",
    "n0\n",
    "N0",
    "n" + "1" * 20,
    "",
]


@cache
def base_dict(slug: str) -> dict[str, Any]:
    with gradviz.watch() as watcher:
        built = lesson(slug).build()
    return watcher.trace(*built.roots).to_dict()


def plain_dict() -> dict[str, Any]:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    return gradviz.trace((x * x).sum(), names={"x": x}).to_dict()


def paths(value: Any, prefix: Path_ = ()) -> Iterator[Path_]:
    """Every place in a JSON value, containers and leaves."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*prefix, index))


def get(data: Any, path: Path_) -> Any:
    for step in path:
        data = data[step]
    return data


def put(data: Any, path: Path_, value: Any) -> Any:
    """``data`` with the value at ``path`` replaced (or deleted: ``DELETE``); the
    containers along the path are copied, the rest is shared (nothing changes it)."""
    if not path:
        return value
    step, rest = path[0], path[1:]
    copied = dict(data) if isinstance(data, dict) else list(data)
    if rest:
        copied[step] = put(data[step], rest, value)
    elif value is DELETE:
        del copied[step]
    else:
        copied[step] = value
    return copied


DELETE = object()


def id_paths(data: dict[str, Any]) -> list[Path_]:
    """Every place that holds an id or a reference to one."""
    wanted = {"id", "src", "dst", "node_id", "tensor", "base"}
    found = []
    for path in paths(data):
        named = bool(path) and path[-1] in wanted and isinstance(get(data, path), str)
        listed = len(path) >= 2 and path[-2] in ("root_ids", "outputs")
        if named or listed:
            found.append(path)
    return found


def where(path: Path_) -> str:
    text = "graph"
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else f".{step}"
    return text


def test_the_paths_cover_every_kind_of_id() -> None:
    data = base_dict("10-no-grad-eval")
    kinds = {str(p[-1]) if isinstance(p[-1], str) else str(p[-2]) for p in id_paths(data)}
    assert {"id", "src", "dst", "node_id", "tensor", "root_ids", "outputs"} <= kinds


@pytest.mark.parametrize("crafted", CRAFTED_IDS)
def test_crafted_ids_are_refused_naming_the_field(crafted: str) -> None:
    for slug in ("05-ten-ops", "10-no-grad-eval"):
        data = base_dict(slug)
        for path in id_paths(data):
            with pytest.raises(InvalidInput) as caught:
                Graph.from_dict(put(data, path, crafted))
            assert where(path) in str(caught.value), (path, str(caught.value))


@pytest.mark.parametrize("crafted", CRAFTED_IDS[:4])
def test_crafted_keys_of_the_link_tables_are_refused(crafted: str) -> None:
    data = base_dict("10-no-grad-eval")
    for table in ("node_ops", "node_modules", "tensor_links"):
        changed = copy.deepcopy(data)
        links = changed["forward"][table]
        links[crafted] = next(iter(links.values()), 0)
        with pytest.raises(InvalidInput, match=f"graph.forward.{table}"):
            Graph.from_dict(changed)


def wrong_values(current: Any) -> list[Any]:
    """Values of another kind than ``current``, or out of range for it."""
    values: list[Any] = [DELETE, None, {"id": "n0"}]
    if isinstance(current, bool):
        values += [1, "true"]
    elif isinstance(current, int):
        values += [-1, 2**70, 1.5, True, "7"]
    elif isinstance(current, float):
        values += ["1.5", [1.0]]
    elif isinstance(current, str):
        values += [7, [current]]
    elif isinstance(current, list):
        values += ["x", [{"x": 1}]]
    elif current is None:
        values += ["x", 7, []]
    return values


@pytest.mark.parametrize("slug", ["05-ten-ops", "10-no-grad-eval", "plain"])
def test_every_field_wrong_gives_invalid_input_or_a_drawable_graph(slug: str) -> None:
    """Each field replaced by each wrong kind of value: a clear InvalidInput naming a
    field, or (when the value is allowed there) a graph whose DOT writes without fault."""
    data = plain_dict() if slug == "plain" else base_dict(slug)
    loaded = 0
    for path in paths(data):
        for wrong in wrong_values(get(data, path)):
            if not path and wrong is DELETE:
                continue
            try:
                graph = Graph.from_dict(put(data, path, wrong))
            except InvalidInput as error:
                assert "graph" in str(error) or "not a gradviz graph" in str(error)
                continue
            loaded += 1
            for view in ("backward", "combined", *(("forward",) if graph.forward else ())):
                with contextlib.suppress(GradvizError):
                    graph.to_dot(view=view)
    assert loaded > 0  # some values are allowed (a name may be None)


def test_references_must_resolve() -> None:
    data = base_dict("10-no-grad-eval")
    cases = {
        ("edges", 0, "dst"): "n999",
        ("tensors", 0, "node_id"): "n999",
        ("forward", "tensors", 0, "created_by"): 999,
        ("forward", "ops", 0, "module"): 999,
        ("forward", "ops", 0, "inputs"): [
            {"position": "0", "tensor": "f999", "version": 0, "value": None, "text": ""}
        ],
    }
    for path, value in cases.items():
        with pytest.raises(InvalidInput, match="must be the"):
            Graph.from_dict(put(data, path, value))


def test_module_parents_cannot_loop() -> None:
    """A parent after its child (a cycle) would make module_chain walk forever."""
    data = copy.deepcopy(base_dict("10-no-grad-eval"))
    modules = data["forward"]["modules"]
    assert len(modules) >= 2
    modules[0]["parent"] = 1
    with pytest.raises(InvalidInput, match=r"modules\[0\]\.parent"):
        Graph.from_dict(data)


@pytest.mark.parametrize(
    "text", ["", "[", "null", "[]", '"x"', "1", "[" * 100_000 + "]" * 100_000, b"\xff"]
)
def test_text_that_is_not_a_graph(text: str | bytes) -> None:
    with pytest.raises(InvalidInput, match="not a gradviz graph"):
        Graph.from_json(text)


@pytest.mark.parametrize("crafted", CRAFTED_IDS[:4])
def test_hand_built_graphs_cannot_put_ids_into_dot(crafted: str) -> None:
    """Behind the loader: the DOT writers let no id through that is not a plain name."""
    nodes = [Node(crafted, "MulBackward0", "mul", 1), Node("n1", "AccumulateGrad", "acc", 0)]
    edges = [Edge(crafted, 0, "n1", 0)]
    tensors = [
        TensorRecord(
            "t0",
            "x",
            (2,),
            "torch.float32",
            "cpu",
            True,
            True,
            0,
            None,
            None,
            None,
            Role.LEAF,
            "n1",
            None,
        )
    ]
    graph = Graph(nodes, edges, [crafted], tensors)
    for view in ("backward", "combined"):
        with pytest.raises(InvalidInput, match="which gradviz does not draw"):
            graph.to_dot(view=view)


# -- the fuzz: loader -> DOT -> dot -> SVG, page, widget payload ---------------------------
HOSTILE_TEXT = st.sampled_from(
    [
        *CRAFTED_IDS,
        "<script>alert(1)</script>",
        '<?xml-stylesheet href="https://example.invalid/x.css"?>',
        "javascript:alert(1)",
        '" onload="alert(1)',
        "]]><!--",
        "\\N\\G \\",
        "é" * 9_000,
        "NaN",
        "Infinity",
    ]
)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | HOSTILE_TEXT,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    slug = draw(st.sampled_from(["05-ten-ops", "10-no-grad-eval", "01-one-grad"]))
    data = base_dict(slug)
    all_paths = list(paths(data))[1:]
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        path = draw(st.sampled_from(all_paths))
        value = draw(st.just(DELETE) | JSON_VALUES | HOSTILE_TEXT | st.just(get(data, path)))
        with contextlib.suppress(KeyError, IndexError, TypeError):  # the place is gone
            data = put(data, path, value)
        all_paths = list(paths(data))[1:] or all_paths
    return data


@pytest.mark.needs_dot
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,  # the same examples on every run, as in test_properties.py
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=mutated())
def test_fuzz_loader_through_render_page_and_widget(data: dict[str, Any]) -> None:
    text = json.dumps(data, allow_nan=True)
    try:
        graph = Graph.from_json(text)
    except InvalidInput as error:
        assert str(error)
        return
    try:
        for view in ("backward", "combined"):
            assert_inert_svg(run_dot(graph.to_dot(view=view)).decode("utf-8"))
        recording = Recording(graph, [], {}, "summary", "backward")
        assert_inert_page(replay_html(recording))
        assert_inert_payload(stepper_payload(recording))
    except GradvizError as error:  # a clear refusal is fine, a KeyError is not
        assert "This is a gradviz bug" not in str(error), str(error)


@pytest.mark.parametrize("prefix", ['g"x', "g x", "g<x", "", "1g", 'g0" onload="x'])
def test_the_svg_id_prefix_is_a_plain_name(prefix: str) -> None:
    """The prefix starts every SVG id, which the stepper finds by attribute selectors."""
    graph = Graph.from_dict(plain_dict())
    with pytest.raises(InvalidInput, match="prefix must be"):
        graph.to_dot(prefix=prefix)
    assert f'id="my-graph_{graph.nodes[0].id}"' in graph.to_dot(prefix="my-graph")
