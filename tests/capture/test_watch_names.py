"""watch()'s names: thread scope, names in functions, loops and cells, names
bound only to the tensor really assigned, and what the forward view calls things.

Expected names come from the code each test runs (the variables it binds), and values
from PyTorch itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
import torch

import gradviz
from gradviz.capture.watch import _ACTIVE


# -- watch() belongs to the thread that entered it ----------------------------------------
def _in_threads(*jobs: Callable[[threading.Barrier], Any]) -> list[Any]:
    """Run each job in its own thread, the jobs meeting at a barrier inside their blocks."""
    barrier = threading.Barrier(len(jobs), timeout=60)
    results: list[Any] = [None] * len(jobs)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            results[index] = jobs[index](barrier)
        except BaseException as error:  # reported below, in the test's thread
            errors.append(error)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    if errors:
        raise errors[0]
    return results


def test_two_threads_watch_at_once_each_sees_only_its_own_ops_and_modules() -> None:
    def plain(barrier: threading.Barrier) -> gradviz.Watch:
        with gradviz.watch() as w:
            barrier.wait()  # both blocks are open now
            a = torch.tensor(2.0, requires_grad=True)
            b = a * 3
            barrier.wait()  # the other thread ran its model meanwhile
            del b
        return w

    def with_model(barrier: threading.Barrier) -> gradviz.Watch:
        model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Tanh())
        with gradviz.watch(model) as w:
            barrier.wait()
            model(torch.ones(3)).sum()
            barrier.wait()
        return w

    first, second = _in_threads(plain, with_model)
    assert first.forward.modules == []
    assert [op.name for op in first.forward.ops] == ["tensor", "mul"]
    assert [m.type_name for m in second.forward.modules] == ["Sequential", "Linear", "Tanh"]
    assert "mul" not in [op.name for op in second.forward.ops]
    assert first.errors == [] and second.errors == []
    assert not _ACTIVE


def test_nesting_in_one_thread_is_still_refused_while_another_thread_watches() -> None:
    def outer(barrier: threading.Barrier) -> str:
        with gradviz.watch():
            barrier.wait()
            try:
                with gradviz.watch():
                    pass
            except gradviz.WatchNestingError as error:
                message = str(error)
            barrier.wait()
        return message

    def other(barrier: threading.Barrier) -> bool:
        with gradviz.watch():
            barrier.wait()
            barrier.wait()
        return True

    message, ok = _in_threads(outer, other)
    assert "nested" in message and "this thread" in message
    assert ok and not _ACTIVE


# -- every assignment target is named, wherever the code runs -------------------------------
TEN = "abcdefghijk"
TEN_OPS = """
a = torch.tensor(2.0)
b = torch.tensor(2.0)
c = a * b
c.requires_grad = True
d = torch.tensor(2.0)
e = c * d
f = torch.tensor(2.0)
g = f * e
h = torch.tensor(2.0, requires_grad=True)
i = g / h
j = i + h
k = j * i
"""


def _compiled(source: str, filename: str) -> Any:
    """Code as a notebook or a script has it: its lines are in linecache under filename."""
    import linecache

    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return compile(source, filename, "exec")


def _indented(body: str, spaces: int) -> str:
    return "".join(" " * spaces + line + "\n" for line in body.strip().splitlines())


def _ten_ops_in(shape: str) -> tuple[gradviz.Watch, torch.Tensor]:
    """The ten-op lesson written in a function, a method, a nested function or a cell."""
    if shape == "function":
        source = "def lesson():\n" + _indented(TEN_OPS, 4) + "    return k\n"
        source += "with gradviz.watch() as w:\n    k = lesson()\n"
    elif shape == "function with the block inside":
        source = "def lesson():\n    with gradviz.watch() as w:\n" + _indented(TEN_OPS, 8)
        source += "    return w, k\nw, k = lesson()\n"
    elif shape == "method":
        source = "class Lesson:\n    def run(self):\n" + _indented(TEN_OPS, 8)
        source += "        return k\nwith gradviz.watch() as w:\n    k = Lesson().run()\n"
    elif shape == "nested function":
        source = "def outer():\n    def inner():\n" + _indented(TEN_OPS, 8)
        source += "        return k\n    return inner()\n"
        source += "with gradviz.watch() as w:\n    k = outer()\n"
    else:  # a notebook cell, as ipykernel names its code
        source = "with gradviz.watch() as w:\n" + _indented(TEN_OPS, 4)
    scope: dict[str, Any] = {"torch": torch, "gradviz": gradviz}
    filename = f"/tmp/ipykernel_4242/{abs(hash(shape))}.py"
    exec(_compiled(source, filename), scope)
    return scope["w"], scope["k"]


@pytest.mark.parametrize(
    "shape",
    ["function", "function with the block inside", "method", "nested function", "cell"],
)
def test_the_ten_op_lesson_keeps_every_name_wherever_it_is_written(shape: str) -> None:
    w, k = _ten_ops_in(shape)
    assert [t.name for t in w.forward.tensors] == list(TEN)
    recording = w.record(k)
    on_graph = {t.name for t in recording.graph.tensors if t.name}
    # a and b are freed constants, off the graph; every other name reaches the recording
    assert set("cdefghijk") <= on_graph, on_graph
    e = recording.graph.tensor("e")
    assert e.node_id is not None and recording.graph.node(e.node_id).type_name == "MulBackward0"
    assert recording.graph.forward is not None
    assert recording.graph.forward.tensor(recording.graph.forward.tensor_links[e.id]).name == "e"
    plain_a, plain_b = torch.tensor(2.0), torch.tensor(2.0)
    assert e.data is not None and e.data.values == (float(plain_a * plain_b * 2),)


def test_a_name_goes_only_to_the_tensor_bound_to_it() -> None:
    with gradviz.watch() as w:
        it = iter([torch.tensor(1.0, requires_grad=True), torch.tensor(2.0)])
        xs = [torch.tensor(float(n), requires_grad=True) for n in range(3)]
        total = sum(x * x for x in xs)
    names = [t.name for t in w.forward.tensors if t.name]
    assert not [n for n in names if n.startswith("it")], names
    assert [n for n in names if n.startswith("total")] == ["total"]
    assert w.names()["total"] is total
    assert next(it).requires_grad


def test_a_loop_names_each_value_of_its_variable_in_turn() -> None:
    with gradviz.watch() as w:
        u = torch.tensor(1.0, requires_grad=True)
        values = [u]
        for _ in range(3):
            u = u * 2
            values.append(u)
    named = w.names()
    assert [name for name in named if name.startswith("u")] == ["u", "u′", "u″", "u‴"]
    assert [named[n] for n in ("u", "u′", "u″", "u‴")] == values
    assert all(named[n] is v for n, v in zip(("u", "u′", "u″", "u‴"), values, strict=True))


def test_a_loop_inside_a_function_names_each_value_too() -> None:
    def run() -> torch.Tensor:
        v = torch.tensor(1.0, requires_grad=True)
        for _ in range(2):
            v = v + 1
        return v

    with gradviz.watch() as w:
        run()
    assert [t.name for t in w.forward.tensors] == ["v", "v′", "v″"]


def test_a_long_loop_keeps_few_statements_waiting_and_names_every_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A line that runs two ops, in a loop: each run ends the one before, so the statements
    waiting to bind a name stay few (they were read at every op: 64 of them made each op
    cost 2.5x), and every value the loop's variable held is still named."""
    from gradviz.capture import names

    most = [0]
    settle = names.Bindings.settle

    def counting(self: names.Bindings, *args: Any, **kwargs: Any) -> None:
        most[0] = max(most[0], len(self.pending))
        settle(self, *args, **kwargs)

    monkeypatch.setattr(names.Bindings, "settle", counting)
    weight = torch.randn(3, 3, requires_grad=True)
    with gradviz.watch() as w:
        h = torch.ones(2, 3)
        values = [h]
        for _ in range(100):
            h = torch.tanh(h @ weight)
            values.append(h)
    assert most[0] <= 2 * names._PER_STATEMENT
    named = {id(t): n for n, t in w.names().items()}
    assert all(id(v) in named and named[id(v)].startswith("h") for v in values)


@pytest.mark.slow
def test_a_real_notebook_names_what_its_cells_assign(kernel_name: str) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    cells = [
        "import torch, gradviz",
        "def lesson():\n" + _indented(TEN_OPS, 4) + "    return k",
        "with gradviz.watch() as w:\n    k = lesson()\n    u = k * 1\n    for _ in range(2):\n"
        "        u = u + 1",
        "print(sorted(t.name for t in w.forward.tensors if t.name))",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(notebook, timeout=120, kernel_name=kernel_name).execute()
    printed = notebook.cells[-1].outputs[0]["text"]
    assert eval(printed) == sorted([*TEN, "u", "u′", "u″"])


# -- parameters: no initialisation in the forward pass, names that read as paths ----------
def test_building_a_model_inside_the_block_records_no_initialisation() -> None:
    with gradviz.watch() as w:
        model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
        loss = model(torch.ones(4)).sum()
    assert [op.name for op in w.forward.ops] == ["ones", "linear", "relu", "linear", "sum"]
    assert not [op for op in w.forward.ops if op.bumps]
    params = {t.name: t for t in w.forward.tensors if t.name_source == "param"}
    assert set(params) == {f"model.{name}" for name, _ in model.named_parameters()}
    for name, tensor in model.named_parameters():
        item = params[f"model.{name}"]
        assert item.version == tensor._version  # as torch has it, no bump of gradviz's
        assert item.data is not None and item.data.values == tuple(tensor.flatten().tolist())
    graph = w.trace(loss)
    assert {t.name for t in graph.tensors if t.role is gradviz.Role.LEAF} == set(params)
    dot = graph.to_dot(view="forward")
    assert "changed in place" not in dot and "kaiming" not in dot


def test_explicit_initialisation_in_torch_nn_init_is_left_out_too() -> None:
    layer = torch.nn.Linear(2, 2)
    with gradviz.watch(layer) as w:
        torch.nn.init.constant_(layer.weight, 0.5)
        out = layer(torch.ones(2))
    assert [op.name for op in w.forward.ops] == ["ones", "linear"]
    names = {t.name for t in w.forward.tensors if t.name_source == "param"}
    assert names == {"layer.weight", "layer.bias"}  # not a bare "weight"
    assert torch.equal(out, torch.nn.functional.linear(torch.ones(2), layer.weight, layer.bias))


def test_nested_module_paths_stay_as_torch_names_them() -> None:
    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = torch.nn.Linear(2, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            hidden = self.fc1(x)
            return hidden.tanh()

    net = Net()
    with gradviz.watch(net) as w:
        net(torch.ones(2)).sum()
    names = {t.name for t in w.forward.tensors if t.name}
    assert {"fc1.weight", "fc1.bias", "hidden"} <= names


def test_a_loop_variable_does_not_name_a_layers_bias() -> None:
    layer = torch.nn.Linear(2, 2)
    with gradviz.watch() as w:
        total = torch.tensor(0.0)
        for param in [layer.bias]:
            total = total + param.sum()
    names = {t.name for t in w.forward.tensors if t.name}
    assert "layer.bias" in names and "param" not in names
    graph = w.trace(total)
    assert {t.name for t in graph.tensors} == {"layer.bias", "total′"}  # no unused weight
    assert w.names()["total′"] is total


def test_forward_boxes_keep_shape_and_values_apart() -> None:
    with gradviz.watch() as w:
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = (x * 2).sum()
    dot = w.trace(y).to_dot(view="forward")
    assert "shape 3 · [1, 2, 3]" in dot
    assert ">3 [1, 2, 3]<" not in dot


# -- named off-graph inputs: their None slots say whose they are --------------------------
def test_none_slots_of_named_constants_carry_the_name_in_every_view() -> None:
    w, k = _ten_ops_in("cell")
    graph = w.trace(k)
    for view in ("backward", "combined"):
        dot = graph.to_dot(view=view)
        # e = c * d and g = f * e: d and f are off the graph, each leaves one None slot
        assert dot.count("None · d<") == 1 and dot.count("None · f<") == 1, view
    none_slots = [e for e in graph.edges if e.dst is None]
    assert len(none_slots) == 2


def test_a_linear_layers_off_graph_inputs_link_to_their_none_slots() -> None:
    layer = torch.nn.Linear(4, 2)
    layer.weight.requires_grad_(False)
    x = torch.ones(4)
    with gradviz.watch() as w:
        out = layer(x * 2).sum()
    graph = w.trace(out)
    dot = graph.to_dot(view="combined")
    addmm = next(n for n in graph.nodes if n.type_name == "AddmmBackward0")
    slots = [e.slot for e in graph.out_edges(addmm.id) if e.dst is None]
    assert len(slots) == 2  # the input and the frozen weight
    links = [line for line in dot.splitlines() if "gv_constlink" in line]
    assert len(links) == 2
    assert "None · layer.weight<" in dot
    weight_slot = f"c_{addmm.id}_{slots[-1]}"  # addmm(bias, input, weight.t()): mat2 last
    assert any(weight_slot in line and "None · layer.weight" in line for line in dot.splitlines())


# -- the narration tells nodes of one type apart -------------------------------------------
def test_narration_says_which_of_several_mul_nodes_a_gradient_goes_to() -> None:
    from gradviz.explain.steps import narrate

    w, k = _ten_ops_in("cell")
    recording = w.record(k)
    words = [narrate(recording, index) for index in range(len(recording.steps))]
    muls = [n for n in recording.graph.nodes if n.type_name == "MulBackward0"]
    assert len(muls) == 3
    text = " ".join(words)
    assert "to MulBackward0 " not in text.replace("to MulBackward0 (", "")
    assert "to MulBackward0 (g)" in text and "to MulBackward0 (e)" in text


def test_a_factory_tensor_nothing_uses_or_names_is_not_drawn() -> None:
    layer = torch.nn.Linear(2, 1)
    with gradviz.watch() as w:
        layer.bias = torch.nn.Parameter(torch.tensor([0.5]))  # the factory's tensor is wrapped
        x = torch.ones(2)
        out = layer(x).sum()
    factories = [op for op in w.forward.ops if op.kind == "factory"]
    assert [op.name for op in factories] == ["tensor", "ones"]
    dot = w.trace(out).to_dot(view="forward")
    unused = factories[0].outputs[0]
    assert f"  {unused} [" not in dot  # no box tied to nothing
    assert "<B>x</B>" in dot and "layer.bias" in dot
