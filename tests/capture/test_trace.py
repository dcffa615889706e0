"""The walk: exact structure of the lesson graphs, checked against torch's own nodes."""

from __future__ import annotations

import gc
import json

import pytest
import torch

import gradviz
from gradviz import Graph, NotOnGraph, Role
from gradviz.teaching.lessons import LESSONS, lesson


def edges_of(graph: Graph) -> list[tuple[str, int, str | None, int]]:
    return [(e.src, e.slot, e.dst, e.input_nr) for e in graph.edges]


def types_of(graph: Graph) -> list[str]:
    return [n.type_name for n in graph.nodes]


def roles_of(graph: Graph) -> dict[str, Role]:
    return {t.label: t.role for t in graph.tensors}


def assert_matches_torch(graph: Graph) -> None:
    """Every node's edges are exactly its live next_functions, in slot order."""
    ids = {n.torch_node: n.id for n in graph.nodes}
    assert len(ids) == len(graph.nodes), "each live node appears once"
    for node in graph.nodes:
        expected = [
            (node.id, slot, None if nxt is None else ids[nxt], nr)
            for slot, (nxt, nr) in enumerate(node.torch_node.next_functions)
        ]
        assert [(e.src, e.slot, e.dst, e.input_nr) for e in graph.out_edges(node.id)] == expected
        assert node.type_name == type(node.torch_node).__name__
        assert node.sequence_nr == node.torch_node._sequence_nr()


def test_one_grad_lesson() -> None:
    built = lesson("one-grad").build()
    graph = gradviz.trace(*built.roots, names=built.names)
    assert types_of(graph) == ["MulBackward0", "AccumulateGrad"]
    assert edges_of(graph) == [("n0", 0, "n1", 0), ("n0", 1, None, 0)]
    assert graph.root_ids == ["n0"]
    assert roles_of(graph) == {"c": Role.BRANCH, "a": Role.LEAF, "b": Role.CONSTANT}
    assert graph.node("n0").torch_node is built.names["c"].grad_fn
    assert graph.node("n1").leaf_tensor is built.names["a"]
    assert graph.tensor("a").node_id == "n1"
    assert graph.tensor("c").node_id == "n0" and graph.tensor("c").output_nr == 0
    assert graph.tensor("b").node_id is None
    assert_matches_torch(graph)


def test_chain_lesson() -> None:
    built = lesson("chain").build()
    graph = gradviz.trace(*built.roots, names=built.names)
    assert types_of(graph) == [
        "MulBackward0",
        "MulBackward0",
        "AccumulateGrad",
        "AccumulateGrad",
        "AccumulateGrad",
    ]
    assert edges_of(graph) == [
        ("n0", 0, "n1", 0),
        ("n0", 1, "n2", 0),
        ("n1", 0, "n3", 0),
        ("n1", 1, "n4", 0),
    ]
    assert graph.node("n2").leaf_tensor is built.names["d"]
    assert graph.node("n3").leaf_tensor is built.names["a"]
    assert graph.node("n4").leaf_tensor is built.names["b"]
    assert roles_of(graph) == {
        "e": Role.BRANCH,
        "d": Role.LEAF,
        "a": Role.LEAF,
        "b": Role.LEAF,
        "c": Role.BRANCH,
    }
    assert_matches_torch(graph)


def test_unbind_lesson_shows_which_output() -> None:
    built = lesson("unbind").build()
    graph = gradviz.trace(*built.roots, names=built.names)
    assert types_of(graph) == ["MulBackward0", "MulBackward0", "UnbindBackward0", "AccumulateGrad"]
    assert edges_of(graph) == [
        ("n0", 0, "n1", 0),
        ("n0", 1, "n2", 2),
        ("n1", 0, "n2", 0),
        ("n1", 1, "n2", 1),
        ("n2", 0, "n3", 0),
    ]
    assert graph.is_multi_output("n2") and not graph.is_multi_output("n1")
    for name, nr in (("b", 0), ("c", 1), ("d", 2)):
        record = graph.tensor(name)
        assert (record.node_id, record.output_nr) == ("n2", nr)
        assert record.output_nr == built.names[name].output_nr
    assert_matches_torch(graph)


def test_ten_op_lesson() -> None:
    built = lesson("ten-ops").build()
    graph = gradviz.trace(*built.roots, names=built.names)
    assert types_of(graph) == [
        "MulBackward0",  # k = j * i
        "AddBackward0",  # j = i + h
        "DivBackward0",  # i = g / h
        "AccumulateGrad",  # h
        "MulBackward0",  # g = f * e
        "MulBackward0",  # e = c * d
        "AccumulateGrad",  # c
    ]
    assert edges_of(graph) == [
        ("n0", 0, "n1", 0),
        ("n0", 1, "n2", 0),
        ("n1", 0, "n2", 0),
        ("n1", 1, "n3", 0),
        ("n2", 0, "n4", 0),
        ("n2", 1, "n3", 0),
        ("n4", 0, None, 0),
        ("n4", 1, "n5", 0),
        ("n5", 0, "n6", 0),
        ("n5", 1, None, 0),
    ]
    roles = roles_of(graph)
    assert {n for n, r in roles.items() if r is Role.CONSTANT} == {"a", "b", "d", "f"}
    assert {n for n, r in roles.items() if r is Role.LEAF} == {"c", "h"}
    assert {n for n, r in roles.items() if r is Role.BRANCH} == {"e", "g", "i", "j", "k"}
    assert graph.node("n6").leaf_tensor is built.names["c"]
    assert graph.node("n3").leaf_tensor is built.names["h"]
    assert len(graph.in_edges("n3")) == 2  # two streams converge on AccumulateGrad(h)
    assert len(graph.in_edges("n2")) == 2  # and two on DivBackward0 (i is used twice)
    assert_matches_torch(graph)


@pytest.mark.parametrize("item", LESSONS, ids=lambda item: item.slug)
def test_every_lesson_matches_torch(item: gradviz.teaching.lessons.Lesson) -> None:
    built = item.build()
    assert_matches_torch(gradviz.trace(*built.roots, names=built.names))


def test_internal_nodes_of_linear_in_backward_order() -> None:
    x = torch.randn(2, 3, requires_grad=True)
    w = torch.randn(4, 3, requires_grad=True)
    b = torch.randn(4, requires_grad=True)
    y = torch.nn.functional.linear(x, w, b)
    graph = gradviz.trace(y, names={"x": x, "w": w, "b": b})
    assert graph.nodes[0].type_name == "AddmmBackward0"
    targets = [e.dst and graph.node(e.dst).type_name for e in graph.out_edges("n0")]
    assert targets == [t and type(t).__name__ for t, _ in y.grad_fn.next_functions]
    assert "TBackward0" in types_of(graph)
    assert_matches_torch(graph)


def test_custom_function_and_copy_slices() -> None:
    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor) -> torch.Tensor:
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx: torch.autograd.function.FunctionCtx, g: torch.Tensor) -> torch.Tensor:
            return g * 2

    x = torch.ones(3, requires_grad=True)
    y = Double.apply(x).clone()
    y[1:] = x[1:] * 3  # slice assignment: CopySlices
    graph = gradviz.trace(y.sum())
    types = types_of(graph)
    assert "DoubleBackward" in types and "CopySlices" in types
    double = next(n for n in graph.nodes if n.type_name == "DoubleBackward")
    assert [s.name for s in double.saved] == ["saved_tensors[0]"]
    assert_matches_torch(graph)


def test_several_roots_and_non_scalar_roots() -> None:
    x = torch.randn(3, requires_grad=True)
    y = x * 2
    z = x.exp()
    graph = gradviz.trace(y, z)
    assert len(graph.root_ids) == 2
    assert [t.is_root for t in graph.tensors[:2]] == [True, True]
    assert graph.tensors[0].shape == (3,)
    assert types_of(graph).count("AccumulateGrad") == 1
    assert_matches_torch(graph)


def test_same_root_twice_is_one_root() -> None:
    x = torch.randn(3, requires_grad=True)
    y = (x * 2).sum()
    assert gradviz.trace(y, y).root_ids == ["n0"]


def test_a_leaf_that_requires_grad_is_a_one_node_graph() -> None:
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    graph = gradviz.trace(w, names={"w": w})
    assert types_of(graph) == ["AccumulateGrad"]
    assert graph.edges == []
    assert graph.tensor("w").role is Role.LEAF and graph.tensor("w").node_id == "n0"


def test_module_parameters_are_named_by_path_and_names_win() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    x = torch.randn(5, 3)
    loss = model(x).pow(2).mean()
    graph = gradviz.trace(
        loss, params=model, names={"x": x, "loss": loss, "first": model[0].weight}
    )
    named = {t.name for t in graph.tensors}
    assert {"0.bias", "2.weight", "2.bias", "x", "loss", "first"} <= named
    assert "0.weight" not in named  # names= wins over params=
    assert graph.tensor("x").role is Role.CONSTANT
    leaves = [n for n in graph.nodes if n.type_name == "AccumulateGrad"]
    assert len(leaves) == 4


def test_values_for_small_tensors_summaries_for_large() -> None:
    small = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    big = torch.arange(1000.0, requires_grad=True)
    graph = gradviz.trace((small.sum() + big.sum()), names={"small": small, "big": big})
    s = graph.tensor("small").data
    b = graph.tensor("big").data
    assert s is not None and s.complete and list(s.values) == small.tolist()
    assert b is not None and not b.complete and b.numel == 1000
    assert b.min == big.min().item() and b.max == big.max().item()
    assert b.mean == pytest.approx(big.mean().item())
    assert b.norm == pytest.approx(torch.linalg.vector_norm(big).item())


SUMMARY_CASES = {
    "contiguous": lambda: torch.randn(16, 64),
    "float64": lambda: torch.randn(300, dtype=torch.float64),
    "transposed": lambda: torch.randn(64, 128).t(),
    "permuted": lambda: torch.randn(2, 3, 8, 5).permute(2, 0, 3, 1),
    "sliced, not dense": lambda: torch.randn(10, 10)[:, :5],
    "expanded": lambda: torch.randn(1, 4, 8).expand(3, 4, 8),
    "big": lambda: torch.randn(300, 300),
    "big transposed": lambda: torch.randn(300, 300).t(),
    "integers": lambda: torch.arange(100).reshape(10, 10).t(),
    "half": lambda: torch.randn(40, 40).half(),
}


@pytest.mark.parametrize("numpy_available", [True, False], ids=["numpy", "no numpy"])
@pytest.mark.parametrize("case", list(SUMMARY_CASES))
def test_summaries_match_torch_on_every_path(
    case: str, numpy_available: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gradviz.model import summarize as summary_module
    from gradviz.model.summarize import summarize

    if not numpy_available:  # NumPy is optional: the torch path must give the same numbers
        monkeypatch.setattr(summary_module, "numpy", None)
    tensor = SUMMARY_CASES[case]()
    summary = summarize(tensor)
    exact = tensor.double()
    assert summary.shape == tuple(tensor.shape) and summary.numel == tensor.numel()
    assert summary.dtype == str(tensor.dtype).removeprefix("torch.")
    assert summary.values == tuple(tensor.reshape(-1)[:6].tolist())  # row-major order
    assert summary.min == tensor.min().item() and summary.max == tensor.max().item()
    assert summary.mean == pytest.approx(exact.mean().item(), rel=1e-3, abs=1e-6)
    rel = 1e-3 if tensor.dtype == torch.float16 else 1e-5  # half keeps its own rounding
    assert summary.norm == pytest.approx(torch.linalg.vector_norm(exact).item(), rel=rel)


@pytest.mark.parametrize("special", [float("inf"), float("-inf"), float("nan"), 3e38])
def test_summaries_of_overflowing_values_match_torch_without_warnings(special: float) -> None:
    import warnings

    from gradviz.model.summarize import summarize

    tensor = torch.randn(100)
    tensor[5] = special
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NumPy would warn about overflow in a sum
        summary = summarize(tensor)
    low, high = torch.aminmax(tensor)
    assert summary.min == pytest.approx(low.item(), nan_ok=True)
    assert summary.max == pytest.approx(high.item(), nan_ok=True)
    assert summary.mean == pytest.approx(tensor.mean().item(), nan_ok=True, rel=1e-5)
    assert summary.norm == pytest.approx(
        torch.linalg.vector_norm(tensor).item(), nan_ok=True, rel=1e-5
    )


def test_saved_values_then_freed_after_backward() -> None:
    a = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(3.0, requires_grad=True)
    c = a * b
    before = gradviz.trace(c)
    saved = {s.name: s.summary for s in before.nodes[0].saved}
    assert saved["self"] is not None and saved["self"].values == (a.item(),)
    assert saved["other"] is not None and saved["other"].values == (b.item(),)
    assert not before.nodes[0].saved_freed
    c.backward()
    after = gradviz.trace(c)
    assert after.nodes[0].saved_freed and after.nodes[0].saved == ()
    assert "freed" in after.to_dot(saved=True)


def test_ids_are_visit_order_and_stable() -> None:
    first = lesson("ten-ops").build()
    second = lesson("ten-ops").build()
    g1 = gradviz.trace(*first.roots, names=first.names)
    g2 = gradviz.trace(*second.roots, names=second.names)
    assert [n.id for n in g1.nodes] == [f"n{i}" for i in range(len(g1.nodes))]
    assert [n.id for n in g1.nodes] == [n.id for n in g2.nodes]
    assert g1.prefix == g2.prefix
    assert edges_of(g1) == edges_of(g2)


def test_json_round_trip() -> None:
    built = lesson("ten-ops").build()
    graph = gradviz.trace(*built.roots, names=built.names)
    text = graph.to_json()
    loaded = Graph.from_json(text)
    assert loaded.to_json() == text
    assert loaded.to_dot() == graph.to_dot()
    assert loaded.to_dot(view="combined") == graph.to_dot(view="combined")
    assert loaded.nodes[0].torch_node is None  # live objects never reach JSON
    json.loads(text)
    with pytest.raises(ValueError, match="not a gradviz graph"):
        Graph.from_json('{"nodes": []}')


def test_deep_chain_is_walked_without_recursion() -> None:
    x = torch.tensor(1.0, requires_grad=True)
    y = x
    # 20 times Python's recursion limit. Not more: once Python has walked a chain of 50,000
    # grad_fns (torch.autograd alone, no gradviz), freeing it later can overflow the C stack
    # and crash the interpreter (docs/architecture.md, "Deep chains").
    depth = 20_000
    for _ in range(depth):
        y = y * 1.0
    gc_was_enabled = gc.isenabled()
    graph = gradviz.trace(y)
    assert len(graph.nodes) == depth + 1
    assert graph.nodes[-1].type_name == "AccumulateGrad"
    assert gc.isenabled() == gc_was_enabled


def test_errors_name_the_problem_and_the_fix() -> None:
    with pytest.raises(NotOnGraph, match="not a tensor"):
        gradviz.trace(3.0)  # type: ignore[arg-type]
    with pytest.raises(NotOnGraph, match="requires_grad=True"):
        gradviz.trace(torch.ones(2) * 2)
    with torch.no_grad():
        inside = torch.ones(2, requires_grad=True) * 2
    with pytest.raises(NotOnGraph, match="no_grad"):
        gradviz.trace(inside)
    with pytest.raises(NotOnGraph, match="at least one root"):
        gradviz.trace()
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="maps names to tensors"):
        gradviz.trace(x * 2, names={"x": 3})  # type: ignore[dict-item]
