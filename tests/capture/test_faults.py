"""Faults while recording: a failing backward, a freed graph, threads, Ctrl-C.

Hooks being gone is proven by behaviour, not by looking at PyTorch's internals: a later
plain backward adds no step to the old recording (or creates no ``Step`` at all) and
gives PyTorch's own gradients.
"""

from __future__ import annotations

import _thread
import gc
import importlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest
import torch

import gradviz
from gradviz.model.recording import Recording, Step


class Boom(torch.autograd.Function):
    """Doubles its input; its backward raises while ``armed`` holds something."""

    armed: ClassVar[list[bool]] = []

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        if Boom.armed:
            Boom.armed.pop()
            raise ValueError("boom in backward")
        return grad * 2


def boom_graph() -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    loss = (Boom.apply(x.sin()).exp() * x).sum()
    return x, loss


def plain_grad(make: Callable[[], tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    x, loss = make()
    loss.backward()
    assert x.grad is not None
    return x.grad


@pytest.fixture
def count_steps(monkeypatch: pytest.MonkeyPatch) -> list[Step]:
    """Every ``Step`` gradviz's hooks create from now on (none once they are removed)."""
    made: list[Step] = []

    def counting(*args: Any, **kwargs: Any) -> Step:
        step = Step(*args, **kwargs)
        made.append(step)
        return step

    monkeypatch.setattr(importlib.import_module("gradviz.capture.record"), "Step", counting)
    return made


# -- backward raising midway ------------------------------------------------------------------
def test_a_failing_backward_keeps_the_partial_recording_and_removes_the_hooks() -> None:
    x, loss = boom_graph()
    Boom.armed[:] = [True]
    with pytest.raises(gradviz.BackwardFailed) as caught:
        gradviz.record(loss, retain_graph=True)
    failed = caught.value
    recording = failed.recording
    assert isinstance(recording, Recording)
    assert failed.node_id is not None
    assert recording.graph.node(failed.node_id).type_name == "BoomBackward"
    assert recording.steps[-1].node_id == failed.node_id and not recording.steps[-1].finished
    assert all(step.finished for step in recording.steps[:-1]) and len(recording.steps) > 2
    message = str(failed)
    assert "BoomBackward" in message and "boom in backward" in message
    assert isinstance(failed.__cause__, ValueError)
    steps = len(recording.steps)
    x.grad = None
    loss.backward()  # plain, now that Boom works: no gradviz hook may fire
    assert len(recording.steps) == steps
    assert x.grad is not None and torch.equal(x.grad, plain_grad(boom_graph))


def test_a_raising_user_hook_names_the_node_it_stopped() -> None:
    """A tensor hook runs before gradviz's prehook: no step was opened, yet the failing
    node is named (the engine's next), not 'before any node ran'."""
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = x.sin()
    loss = (y.exp() * 3).sum()
    fired: list[int] = []

    def hook(grad: torch.Tensor) -> None:
        fired.append(1)
        if len(fired) == 1:
            raise RuntimeError("the user's hook failed")

    y.register_hook(hook)
    with pytest.raises(gradviz.BackwardFailed) as caught:
        gradviz.record(loss, retain_graph=True)
    failed = caught.value
    recording = failed.recording
    assert isinstance(recording, Recording)
    assert y.grad_fn is not None
    node = next(n for n in recording.graph.nodes if n.torch_node is y.grad_fn)
    assert failed.node_id == node.id
    assert recording.step_for(node.id) is None  # it never ran
    assert all(step.finished for step in recording.steps) and recording.steps
    assert f"SinBackward0 ({node.id}) was about to run" in str(failed)
    assert "the user's hook failed" in str(failed)
    steps = len(recording.steps)
    loss.backward()  # the user's hook is still there (and fires), gradviz's are gone
    assert len(fired) == 2 and len(recording.steps) == steps
    expected = torch.autograd.grad((x.sin().exp() * 3).sum(), x)[0]
    assert x.grad is not None and torch.equal(x.grad, expected)


# -- a freed graph ----------------------------------------------------------------------------
def sin_graph() -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    return x, (x.sin() * x).sum()


@pytest.mark.parametrize("make", [sin_graph, boom_graph], ids=["built-in", "custom Function"])
def test_recording_after_a_plain_backward_says_retain_graph(
    make: Callable[[], tuple[torch.Tensor, torch.Tensor]],
) -> None:
    Boom.armed.clear()
    _, loss = make()
    loss.backward()
    with pytest.raises(gradviz.GraphFreed, match="retain_graph=True"):
        gradviz.record(loss)


def test_recording_twice_without_retain_graph_says_retain_graph() -> None:
    _, loss = sin_graph()
    gradviz.record(loss)
    with pytest.raises(gradviz.GraphFreed, match="retain_graph=True"):
        gradviz.record(loss)


def test_recording_twice_with_retain_graph_accumulates_as_pytorch_does() -> None:
    x, loss = sin_graph()
    first = gradviz.record(loss, retain_graph=True)
    assert x.grad is not None
    after_first = x.grad.clone()
    second = gradviz.record(loss, retain_graph=True)
    px, plain = sin_graph()
    plain.backward(retain_graph=True)
    assert px.grad is not None and torch.equal(after_first, px.grad)
    plain.backward(retain_graph=True)
    assert torch.equal(x.grad, px.grad)
    assert first.order == second.order and len(first.steps) == len(first.graph.nodes)
    for one, two in zip(first.steps, second.steps, strict=True):
        for mine, theirs in [
            *zip(one.grad_outputs, two.grad_outputs, strict=True),
            *zip(one.grad_inputs, two.grad_inputs, strict=True),
        ]:
            assert isinstance(mine, torch.Tensor) and isinstance(theirs, torch.Tensor)
            assert torch.equal(mine, theirs)
        assert one.flow_ok and two.flow_ok
    (acc,) = [s for s in second.steps if s.type_name == "AccumulateGrad"]
    assert torch.equal(acc.leaf_grad_before, after_first)  # type: ignore[arg-type]
    assert torch.equal(acc.leaf_grad_after, x.grad)  # type: ignore[arg-type]


# -- two threads at once ------------------------------------------------------------------------
def graph_a() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    mid = x.sin() * 3
    return x, mid, (mid.exp() + mid).sum()


def graph_b() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    w = torch.tensor([[1.0, 2.0], [3.0, -4.0]], requires_grad=True)
    mid = (w @ w).tanh()
    return w, mid, (mid * mid).mean().sqrt()


def same_recording(got: Recording, solo: Recording) -> None:
    assert [(s.node_id, s.type_name) for s in got.steps] == [
        (s.node_id, s.type_name) for s in solo.steps
    ]
    for one, two in zip(got.steps, solo.steps, strict=True):
        for mine, theirs in [
            *zip(one.grad_outputs, two.grad_outputs, strict=True),
            *zip(one.grad_inputs, two.grad_inputs, strict=True),
        ]:
            assert (mine is None and theirs is None) or torch.equal(mine, theirs)  # type: ignore[arg-type]


@pytest.fixture
def gc_enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_two_threads_recording_at_once_never_mix_steps(gc_enabled: None) -> None:
    """A barrier in both graphs' hooks: neither backward goes on until both are in flight.
    Thread A then finishes while B waits: gc must stay paused for B, and come back after."""
    barrier = threading.Barrier(2, timeout=20)
    a_done = threading.Event()
    seen_by_b: list[bool] = []
    results: dict[str, Recording] = {}
    errors: list[BaseException] = []
    graphs = {"a": graph_a(), "b": graph_b()}

    def meet(name: str) -> Callable[[torch.Tensor], None]:
        def hook(grad: torch.Tensor) -> None:
            barrier.wait()
            if name == "b":
                assert a_done.wait(20)
                seen_by_b.append(gc.isenabled())

        return hook

    def run(name: str) -> None:
        try:
            results[name] = gradviz.record(graphs[name][2])
        except BaseException as error:  # reported by the main thread
            errors.append(error)
        finally:
            if name == "a":
                a_done.set()

    for name, (_, mid, _) in graphs.items():
        mid.register_hook(meet(name))
    threads = [threading.Thread(target=run, args=(name,)) for name in graphs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    assert seen_by_b == [False], "gc came back on while thread b was still recording"
    assert gc.isenabled()
    for name, make in (("a", graph_a), ("b", graph_b)):
        leaf, _, root = make()
        solo = gradviz.record(root)
        same_recording(results[name], solo)
        own = {n.type_name for n in results[name].graph.nodes}
        assert {s.type_name for s in results[name].steps} <= own
        assert graphs[name][0].grad is not None and leaf.grad is not None
        assert torch.equal(graphs[name][0].grad, leaf.grad)  # type: ignore[arg-type]


def test_overlapping_pauses_end_with_the_last_one(
    gc_enabled: None,
) -> None:
    from gradviz.capture.trace import gc_paused

    gc.disable()
    with gc_paused():
        other = gc_paused()
        other.__enter__()
    other.__exit__(None, None, None)
    assert not gc.isenabled()
    gc.enable()
    first, second = gc_paused(), gc_paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first to start ends first
    assert not gc.isenabled()
    second.__exit__(None, None, None)
    assert gc.isenabled()


# -- Ctrl-C ---------------------------------------------------------------------------------------
CHAIN = 3000


def chain() -> tuple[torch.Tensor, list[torch.Tensor], torch.Tensor]:
    x = torch.tensor([0.5, -1.0], requires_grad=True)
    values = [x]
    for _ in range(CHAIN):
        values.append(values[-1] * 1.0001)
    return x, values, values[-1].sum()


def interrupt_in_hook(grad: torch.Tensor) -> None:
    signal.raise_signal(signal.SIGINT)  # a real SIGINT, as Ctrl-C sends
    time.sleep(5)  # the handler raises KeyboardInterrupt here at the latest


def test_ctrl_c_during_a_long_recording(count_steps: list[Step], gc_enabled: None) -> None:
    x, values, loss = chain()
    handle = values[CHAIN // 2].register_hook(interrupt_in_hook)
    with pytest.raises(KeyboardInterrupt) as caught:
        gradviz.record(loss, retain_graph=True)
    assert type(caught.value) is KeyboardInterrupt  # unchanged, not wrapped
    made = len(count_steps)
    assert CHAIN // 3 < made < CHAIN  # it stopped midway
    assert gc.isenabled()
    handle.remove()
    loss.backward()  # plain: no gradviz hook may create a step
    assert len(count_steps) == made
    px, _, plain = chain()
    plain.backward()
    assert x.grad is not None and px.grad is not None and torch.equal(x.grad, px.grad)


def test_ctrl_c_from_another_thread(count_steps: list[Step], gc_enabled: None) -> None:
    x, values, loss = chain()
    started = threading.Event()
    values[CHAIN - 10].register_hook(lambda grad: started.set())

    recording = [True]

    def spin(grad: torch.Tensor) -> None:
        """Holds the recording until the interrupt lands, if it has not already."""
        deadline = time.monotonic() + 120  # a bound, generous for a busy machine
        while recording and time.monotonic() < deadline:
            time.sleep(0.001)

    values[CHAIN // 2].register_hook(spin)

    def interrupter() -> None:
        if started.wait(120):
            _thread.interrupt_main()

    thread = threading.Thread(target=interrupter)
    thread.start()
    with pytest.raises(KeyboardInterrupt):
        gradviz.record(loss, retain_graph=True)
    recording.clear()
    thread.join()
    made = len(count_steps)
    assert 0 < made < CHAIN
    assert gc.isenabled()
    (grad,) = torch.autograd.grad(loss, x)  # plain: no gradviz hook may create a step
    assert len(count_steps) == made
    px, _, plain = chain()
    assert torch.equal(grad, torch.autograd.grad(plain, px)[0])


def test_ctrl_c_inside_watch_removes_its_mode_and_module_hooks() -> None:
    layer = torch.nn.Linear(2, 2)
    x = torch.tensor([[0.5, -1.0]], requires_grad=True)
    with pytest.raises(KeyboardInterrupt), gradviz.watch(layer) as w:
        y = layer(x).sin()
        signal.raise_signal(signal.SIGINT)
        time.sleep(5)
    ops, scopes = len(w.forward.ops), len(w.forward.modules)
    assert ops and scopes
    z = layer(y).exp().sum()  # after the interrupt: nothing is captured any more
    assert (len(w.forward.ops), len(w.forward.modules)) == (ops, scopes)
    with gradviz.watch(layer) as again:  # and a new watch can start
        layer(x).sum()
    assert again.forward.ops
    z.backward()


def test_ctrl_c_inside_watch_record(count_steps: list[Step], gc_enabled: None) -> None:
    with gradviz.watch() as w:
        x, values, loss = chain()
    handle = values[CHAIN // 2].register_hook(interrupt_in_hook)
    with pytest.raises(KeyboardInterrupt):
        w.record(loss, retain_graph=True)
    made = len(count_steps)
    handle.remove()
    loss.backward()
    assert len(count_steps) == made and gc.isenabled()
    px, _, plain = chain()
    plain.backward()
    assert x.grad is not None and px.grad is not None and torch.equal(x.grad, px.grad)


def test_ctrl_c_while_hooks_are_removed_still_removes_them_all(
    count_steps: list[Step], gc_enabled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second Ctrl-C that lands while gradviz takes its hooks off (here: at the tenth
    removal) is held until every hook is gone, then reaches the user as usual."""
    from torch.utils.hooks import RemovableHandle

    removed = [0]
    remove = RemovableHandle.remove

    def remove_and_interrupt(self: RemovableHandle) -> None:
        removed[0] += 1
        if removed[0] == 10:
            signal.raise_signal(signal.SIGINT)
        remove(self)

    x, _, loss = chain()
    monkeypatch.setattr(RemovableHandle, "remove", remove_and_interrupt)
    with pytest.raises(KeyboardInterrupt):
        gradviz.record(loss, retain_graph=True)
    monkeypatch.undo()
    assert removed[0] == CHAIN + 2  # one hook on each of the nodes (gradviz.capture.hooks)
    made = len(count_steps)
    assert made == CHAIN + 2  # the recording itself ran to the end
    loss.backward()  # plain: no gradviz hook may create a step
    assert len(count_steps) == made
    px, _, plain = chain()
    plain.backward(retain_graph=True)  # the recorded backward, then the plain one
    plain.backward()
    assert x.grad is not None and px.grad is not None and torch.equal(x.grad, px.grad)


def test_ctrl_c_while_watch_starts_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C right after watch() registered its module hooks: held until the block has
    started, then raised; the with-block's exit takes everything off again."""
    module_hooks = torch.nn.modules.module
    register = module_hooks.register_module_forward_hook

    def register_and_interrupt(*args: Any, **kwargs: Any) -> Any:
        handle = register(*args, **kwargs)
        signal.raise_signal(signal.SIGINT)
        return handle

    monkeypatch.setattr(module_hooks, "register_module_forward_hook", register_and_interrupt)
    layer = torch.nn.Linear(2, 2)
    with pytest.raises(KeyboardInterrupt), gradviz.watch(layer):
        pass
    monkeypatch.undo()
    assert not module_hooks._global_forward_hooks and not module_hooks._global_forward_pre_hooks
    with gradviz.watch(layer) as again:  # no block is left active
        layer(torch.ones(1, 2)).sum()
    assert again.forward.ops
