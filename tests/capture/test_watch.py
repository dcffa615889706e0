"""gradviz.watch(): names, roles, constants, forward-op links, versions, restoring state.

Expected values come from PyTorch itself (the same code run without watch), never from
numbers typed from memory.
"""

from __future__ import annotations

import json
import types

import pytest
import torch

import gradviz
from gradviz import Graph, Role
from gradviz.capture.watch import _ACTIVE
from gradviz.teaching.lessons import LESSONS, Lesson, lesson

TEN = "abcdefghijk"


def watched(slug: str) -> tuple[gradviz.Watch, Graph]:
    with gradviz.watch() as w:
        built = lesson(slug).build()
    return w, w.trace(*built.roots)


def reference(slug: str) -> dict[str, torch.Tensor]:
    return lesson(slug).build().names


# -- names and roles ---------------------------------------------------------------------
def test_ten_op_lesson_names_come_from_the_code() -> None:
    _, graph = watched("ten-ops")
    assert graph.forward is not None
    names = [t.name for t in graph.forward.tensors]
    assert names == list(TEN)  # in creation order, from the assignment targets
    assert {t.name_source for t in graph.forward.tensors} == {"assign"}
    assert sorted(t.name for t in graph.tensors if t.name) == list(TEN)


def test_ten_op_lesson_roles_match_torch() -> None:
    _, graph = watched("ten-ops")
    ref = reference("ten-ops")
    assert graph.forward is not None
    for name in TEN:
        tensor = ref[name]
        expected = (
            Role.CONSTANT
            if not tensor.requires_grad
            else (Role.LEAF if tensor.is_leaf else Role.BRANCH)
        )
        assert graph.forward.tensor(name).role is expected, name
        assert graph.tensor(name).role is expected, name
    roles = {name: graph.forward.tensor(name).role for name in TEN}
    assert {n for n, r in roles.items() if r is Role.LEAF} == {"c", "h"}
    assert {"d", "f"} <= {n for n, r in roles.items() if r is Role.CONSTANT}
    assert {n for n, r in roles.items() if r is Role.BRANCH} == set("egijk")


def test_constants_carry_their_values() -> None:
    _, graph = watched("ten-ops")
    ref = reference("ten-ops")
    assert graph.forward is not None
    for name in TEN:
        data = graph.forward.tensor(name).data
        assert data is not None and data.complete
        assert list(data.values) == ref[name].detach().reshape(-1).tolist(), name


def test_requires_grad_switch_is_an_event_with_its_line() -> None:
    _, graph = watched("ten-ops")
    assert graph.forward is not None
    switches = [op for op in graph.forward.ops if op.kind == "requires_grad"]
    assert len(switches) == 1
    (switch,) = switches
    assert switch.outputs == (graph.forward.tensor("c").id,)
    assert switch.line is not None and switch.line.text == "c.requires_grad = True"


def test_names_in_a_function_in_a_script_block_and_from_locals() -> None:
    def inner() -> torch.Tensor:
        first = torch.tensor([1.0, 2.0], requires_grad=True)
        second = first * 3
        return second.sum()

    with gradviz.watch() as w:
        total = inner()
        alias = total * 1  # named from the locals snapshot and the assignment
    graph = w.trace(alias)
    assert graph.forward is not None
    assert graph.forward.names() == ["first", "second", "total", "alias"]
    assert graph.tensor("alias").is_root


def test_explicit_names_win_and_reassigned_names_get_primes() -> None:
    a = torch.tensor(2.0, requires_grad=True)
    with gradviz.watch(names={"A": a}) as w:
        x = a * 2
        x = x + 1
    graph = w.trace(x, names={"result": x})
    assert graph.forward is not None
    assert graph.forward.tensor("A").name_source == "names"
    assert graph.forward.tensor("result").name_source == "names"
    assert graph.forward.names() == ["A", "x", "result"]
    w2_names = [t.name for t in w.forward.tensors]
    assert w2_names == ["A", "x", "x′"]  # without explicit names, the second x is x′


def test_unnamed_tensors_are_labelled_by_their_op() -> None:
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    with gradviz.watch() as w:
        loss = (a * 2).sum()  # noqa: F841 - the name under test
    assert w.forward is not None
    product = w.forward.tensors[1]
    assert product.name is None
    assert w.forward.label(product.id) == "mul"
    assert w.forward.tensor("loss").role is Role.BRANCH


# -- forward-op links ------------------------------------------------------------------------
@pytest.mark.parametrize("item", LESSONS, ids=lambda item: item.slug)
def test_every_backward_step_links_to_its_forward_op(item: Lesson) -> None:
    with gradviz.watch() as w:
        built = item.build()
    recording = w.record(*built.roots, gradient=built.gradient)
    for step in recording.steps:
        op = recording.forward_op(step.node_id)
        node = recording.graph.node(step.node_id)
        if node.is_accumulate_grad:
            assert node.leaf_tensor is not None
            if op is None:
                continue  # the leaf was made before anything the watch saw
            assert recording.graph.forward is not None
            leaf_id = recording.graph.forward.tensor_links[
                next(t.id for t in recording.graph.tensors if t.tensor is node.leaf_tensor)
            ]
            assert leaf_id in op.outputs
            continue
        assert op is not None, node.type_name
        assert op.seq_start <= node.sequence_nr < op.seq_end
        assert op.line is not None and op.line.filename.endswith("lessons.py")
        # the op's output grad_fn is this node (or the node is internal to the op)
        assert node.torch_node is not None
    assert [op.index for op in recording.forward_ops] == list(range(len(recording.forward_ops)))


def test_ten_op_links_name_the_right_lines() -> None:
    with gradviz.watch() as w:
        built = lesson("ten-ops").build()
    recording = w.record(*built.roots)
    lines = {
        recording.graph.node(s.node_id).type_name + ":" + str(i): recording.forward_op(s.node_id)
        for i, s in enumerate(recording.steps)
    }
    texts = {k: (op.line.text if op and op.line else None) for k, op in lines.items()}
    assert texts["MulBackward0:0"] == "k = j * i"
    ref = reference("ten-ops")
    ref["k"].backward()
    assert ref["c"].grad is not None and ref["h"].grad is not None
    graph = recording.graph
    acc_c = graph.tensor("c").node_id
    assert acc_c is not None
    step_c = recording.step_for(acc_c)
    assert step_c is not None and step_c.leaf_grad_after is not None
    assert torch.equal(step_c.leaf_grad_after, ref["c"].grad)  # type: ignore[arg-type]
    op_c = recording.forward_op(acc_c)
    assert op_c is not None and op_c.kind == "requires_grad"


def test_multi_output_and_views_and_detach_and_no_grad() -> None:
    with gradviz.watch() as w:
        a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b, c, d = a.unbind()
        e = b * c * d
        m = e.detach()
        with torch.no_grad():
            n = a * 2
        with torch.enable_grad():
            o = a * 3
        with torch.inference_mode():
            p = torch.ones(2)
        v = a[1:]
    forward = w.forward
    unbind = next(op for op in forward.ops if op.name == "unbind")
    assert [forward.tensor(t).name for t in unbind.outputs] == ["b", "c", "d"]
    assert forward.tensor("m").role is Role.CONSTANT
    assert next(op for op in forward.ops if op.name == "detach").kind == "detach"
    no_grad = next(op for op in forward.ops if forward.tensor("n").id in op.outputs)
    assert not no_grad.grad_enabled and forward.tensor("n").role is Role.CONSTANT
    assert forward.tensor("o").role is Role.BRANCH
    made = next(op for op in forward.ops if forward.tensor("p").id in op.outputs)
    assert made.inference_mode and made.kind == "factory"
    view = next(op for op in forward.ops if forward.tensor("v").id in op.outputs)
    assert view.kind == "view" and forward.tensor("v").base == forward.tensor("a").id
    assert o is not None and p is not None and m is not None and n is not None and v is not None


def test_in_place_ops_bump_versions_and_slices_make_copyslices() -> None:
    with gradviz.watch() as w:
        x = torch.tensor(1.0, requires_grad=True)
        y = 2 * x
        y += 2
        y.log_()
        s = torch.zeros(2)
        s[1] = x * 3
    forward = w.forward
    bumps = [(op.name, [(b.before, b.after) for b in op.bumps]) for op in forward.ops if op.bumps]
    assert bumps == [("add_", [(0, 1)]), ("log_", [(1, 2)]), ("__setitem__", [(0, 1)])]
    assert forward.tensor("y").version == y._version == 2
    assert forward.tensor("s").grad_fn == type(s.grad_fn).__name__ == "CopySlices"
    scalar = next(op for op in forward.ops if op.name == "mul")
    assert [a.value for a in scalar.inputs if not a.is_tensor] == [2]


# -- restoring and results -------------------------------------------------------------------
def _mlp_loss(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return model(x).square().mean()


def test_results_and_gradients_are_bitwise_unchanged() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    x = torch.randn(5, 4)
    plain = _mlp_loss(model, x)
    plain.backward()
    grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
    model.zero_grad()
    with gradviz.watch(model) as w:
        seen = _mlp_loss(model, x)
    recording = w.record(seen)
    assert torch.equal(plain, seen)
    assert all(torch.equal(g, p.grad) for g, p in zip(grads, model.parameters(), strict=True))
    assert recording.steps


def test_leaving_restores_everything_also_after_an_error() -> None:
    hooks_before = (
        dict(torch.nn.modules.module._global_forward_pre_hooks),
        dict(torch.nn.modules.module._global_forward_hooks),
    )
    with pytest.raises(ZeroDivisionError), gradviz.watch():
        torch.ones(2) * 2
        raise ZeroDivisionError
    assert not _ACTIVE
    assert not torch.overrides._get_current_function_mode_stack()
    assert (
        dict(torch.nn.modules.module._global_forward_pre_hooks),
        dict(torch.nn.modules.module._global_forward_hooks),
    ) == hooks_before
    with gradviz.watch() as w:  # a fresh watch works again
        z = torch.ones(1) + 1  # noqa: F841 - the name under test
    assert w.forward.tensor("z").data is not None


def test_nesting_is_refused_clearly() -> None:
    with gradviz.watch(), pytest.raises(gradviz.WatchNestingError, match="nested"):  # noqa: SIM117
        with gradviz.watch():
            pass
    assert not _ACTIVE


def test_trace_inside_the_block_is_refused() -> None:
    with gradviz.watch() as w:
        a = torch.tensor(1.0, requires_grad=True)
        with pytest.raises(gradviz.GradvizError, match="after the with"):
            w.trace(a * 2)


def test_forward_data_survives_json() -> None:
    _, graph = watched("ten-ops")
    again = Graph.from_json(graph.to_json())
    assert again.forward is not None and graph.forward is not None
    assert again.forward.to_dict() == graph.forward.to_dict()
    assert json.loads(again.to_json()) == json.loads(graph.to_json())
    assert again.to_dot(view="forward") == graph.to_dot(view="forward")
    assert again.to_dot(view="combined") == graph.to_dot(view="combined")


def test_names_in_a_notebook_cell() -> None:
    """IPython registers each cell's source in linecache under a pseudo file name."""
    import linecache

    source = (
        "with gradviz.watch() as w:\n"
        "    p = torch.tensor(1.0, requires_grad=True)\n"
        "    q, r = (p * 2).unbind() if False else (p * 2, p * 3)\n"
        "    s = q + r\n"
    )
    filename = "<ipython-input-7-0123456789ab>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, object] = {"gradviz": gradviz, "torch": torch}
    try:
        exec(compile(source, filename, "exec"), namespace)
    finally:
        linecache.cache.pop(filename, None)
    w = namespace["w"]
    assert isinstance(w, gradviz.Watch)
    assert w.forward.names() == ["p", "q", "r", "s"]
    assert w.forward.ops[-1].line is not None and w.forward.ops[-1].line.text == "s = q + r"


def test_source_lines_of_notebook_cells_read_as_cell_lines() -> None:
    from gradviz.model.forward import SourceLine

    cell = SourceLine("/tmp/ipykernel_4242/404010650.py", 6, "<module>", "c = a * b")
    assert cell.short() == "cell line 6"
    assert SourceLine("/home/u/model.py", 12, "f", "y = x").short() == "model.py:12"


def test_a_library_that_wraps_torch_functions_is_passed_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """torchlens leaves torch's functions wrapped in its own code: without passing over
    such frames, every op's line and variable name would be the wrapper's."""
    from gradviz.capture import watch as watch_module

    wrapper = types.ModuleType("fakewrap")
    source = "import torch\ndef tanh(x):\n    out = torch.tanh(x)\n    return out\n"
    exec(compile(source, "/virtual/fakewrap.py", "exec"), wrapper.__dict__)

    def run() -> gradviz.Watch:
        with gradviz.watch() as w:
            x = torch.randn(3, requires_grad=True)
            hidden = wrapper.tanh(x)
        assert hidden.grad_fn is not None
        return w

    seen = run().forward.ops[-1].line
    assert seen is not None and seen.filename == "/virtual/fakewrap.py"  # the wrapper's
    monkeypatch.setattr(watch_module, "TORCH_WRAPPERS", {*watch_module.TORCH_WRAPPERS, "fakewrap"})
    w = run()
    line = w.forward.ops[-1].line
    assert line is not None and line.text == "hidden = wrapper.tanh(x)"
    assert w.forward.names() == ["x", "hidden"]
