"""Recording defects found by trying gradviz from outside, one class per block.

Every test compares the gradients with PyTorch itself, run plainly on a twin of the graph:
gradviz must leave them bitwise equal, whatever else goes wrong.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import gradviz
from gradviz.errors import BackwardFailed, GradvizError, GradvizWarning, InvalidArgument
from gradviz.model.recording import GradValue, Recording

record_module = importlib.import_module("gradviz.capture.record")


# -- helpers ------------------------------------------------------------------------------------
def assert_same_grad(got: torch.Tensor | None, want: torch.Tensor | None, what: str = "") -> None:
    """Same None-ness, layout, dtype, shape and bits (NaN where NaN is)."""
    if want is None:
        assert got is None, f"{what}: expected no gradient, got {got}"
        return
    assert got is not None, f"{what}: expected {want}, got None"
    assert (got.layout, got.dtype, got.shape) == (want.layout, want.dtype, want.shape), what
    if got.layout == torch.strided:
        assert got.stride() == want.stride(), what
    got_dense, want_dense = got.detach().to_dense(), want.detach().to_dense()
    both_nan = torch.isnan(got_dense) & torch.isnan(want_dense)
    assert bool(((got_dense == want_dense) | both_nan).all()), f"{what}: {got} != {want}"


def kept_tensors(recording: Recording) -> list[torch.Tensor]:
    """Every distinct tensor the recording holds (copies of gradients)."""
    values: list[GradValue | None] = list(recording.seeds.values())
    for step in recording.steps:
        values += [*step.grad_outputs, *step.grad_inputs, *step.retained.values()]
        values += [step.leaf_grad_before, step.leaf_grad_after, *(step.sent_by_op or ())]
    unique = {id(v): v for v in values if isinstance(v, torch.Tensor)}
    return list(unique.values())


def kept_bytes(recording: Recording) -> int:
    return sum(t.numel() * t.element_size() for t in kept_tensors(recording))


def each_node_once(recording: Recording) -> None:
    """Exactly the recorded backward's own steps: one per node that ran, in engine order."""
    assert len(recording.order) == len(set(recording.order)), recording.order
    assert recording.order == recording.predicted_order()


# -- (3) the flow check blames no hook for rounding ----------------------------------------------
def fan_in(dtype: torch.dtype, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A leaf feeding several ops: its AccumulateGrad adds five gradients with cancellation."""
    torch.manual_seed(seed)
    x = torch.randn(64, dtype=dtype, requires_grad=True)
    big = torch.randn(64, dtype=dtype) * 3000
    parts = [x * big, x * -big, x.sin() * 7, x * x, x * 3.1]
    return sum(((p * 1.0).sum() for p in parts), torch.zeros((), dtype=dtype)), x


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_no_hook_is_blamed_for_the_engines_rounding(dtype: torch.dtype) -> None:
    for seed in range(8):
        plain_root, plain_x = fan_in(dtype, seed)
        plain_root.backward()
        root, x = fan_in(dtype, seed)
        for keep in ("all", "summary"):
            x.grad = None
            recording = gradviz.record(root, keep=keep, retain_graph=True)  # type: ignore[arg-type]
            assert_same_grad(x.grad, plain_x.grad, f"{dtype} seed {seed}")
            bad = [s.flow_note for s in recording.steps if not s.flow_ok]
            assert not bad, f"{dtype} seed {seed} keep={keep}: {bad}"


def test_the_flow_check_adds_in_the_engines_order_bitwise() -> None:
    """With full copies, the sum gradviz re-adds is the engine's bit for bit (float16:
    every add rounds), so no tolerance is needed for it."""
    from gradviz.analysis.flow import _sum_of, sent_into

    root, _ = fan_in(torch.float16, 3)
    recording = gradviz.record(root, keep="all")
    leaf_step = next(s for s in recording.steps if s.type_name == "AccumulateGrad")
    parts = sent_into(recording, leaf_step, 0)
    assert len(parts) == 6  # x * big, x * -big, sin, x * x (twice), x * 3.1
    total = _sum_of(parts)
    assert isinstance(total, torch.Tensor)
    assert torch.equal(total, leaf_step.grad_outputs[0])  # type: ignore[arg-type]


def test_a_real_hook_change_is_still_caught_in_float16() -> None:
    root, x = fan_in(torch.float16, 1)
    handle = x.register_hook(lambda g: g * 1.01)
    recording = gradviz.record(root)
    handle.remove()
    changed = [s for s in recording.steps if not s.flow_ok]
    assert [s.type_name for s in changed] == ["AccumulateGrad"]


# -- (4) sparse layouts ---------------------------------------------------------------------------
def sparse_leaf(layout: str) -> torch.Tensor:
    torch.manual_seed(4)
    dense = torch.randn(4, 4) * (torch.rand(4, 4) > 0.4)
    made = {
        "strided": dense.clone(),
        "coo": dense.to_sparse(),
        "csr": dense.to_sparse_csr(),
        "csc": dense.to_sparse_csc(),
        "bsr": dense.to_sparse_bsr((2, 2)),
        "bsc": dense.to_sparse_bsc((2, 2)),
    }[layout]
    return made.requires_grad_()


SparseOp = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
SPARSE_OPS: dict[str, SparseOp] = {
    "sparse.mm": lambda a, b: torch.sparse.mm(a, b),
    "sparse.mm reduce=sum": lambda a, b: torch.sparse.mm(a, b, reduce="sum"),
    "sparse.mm reduce=mean": lambda a, b: torch.sparse.mm(a, b, reduce="mean"),
    "sampled_addmm": lambda a, b: torch.sparse.sampled_addmm(a, b, b.t() * 2),
    "a @ b": lambda a, b: a @ b,
    "a @ constant": lambda a, b: a @ torch.ones(4, 3),
    "a + ones": lambda a, b: a + torch.ones(4, 4),
    "to_dense": lambda a, b: a.to_dense() @ b,
}


def run_sparse(layout: str, op: SparseOp, recorded: str | None) -> tuple[Any, ...]:
    """(error text or None, a.grad, b.grad) of the op's backward, plain or recorded."""
    a = sparse_leaf(layout)
    b = torch.randn(4, 4, generator=torch.Generator().manual_seed(5)).requires_grad_()
    try:
        out = op(a, b)
    except (RuntimeError, NotImplementedError):
        return ("forward",)
    loss = (out.to_dense() if out.layout != torch.strided else out).sum()
    try:
        if recorded is None:
            loss.backward()
        else:
            recording = gradviz.record(loss, keep=recorded)  # type: ignore[arg-type]
            assert recording.steps and all(s.finished for s in recording.steps)
            assert all(s.flow_ok for s in recording.steps), recording
    except RuntimeError as error:
        return (str(error).split("\n")[0].removeprefix("backward failed "), a.grad, b.grad)
    return (None, a.grad, b.grad)


@pytest.mark.parametrize("layout", ["strided", "coo", "csr", "csc", "bsr", "bsc"])
@pytest.mark.parametrize("keep", ["all", "summary"])
def test_every_sparse_layout_records_as_plain_backward_runs(layout: str, keep: str) -> None:
    """Where plain backward works, record works and gives the same gradients, layouts
    included; where PyTorch itself fails (BSC has no working backward here), record
    fails with PyTorch's own message and leaves the same .grads."""
    ran = 0
    for name, op in SPARSE_OPS.items():
        plain = run_sparse(layout, op, None)
        if plain == ("forward",):
            continue
        got = run_sparse(layout, op, keep)
        what = f"{layout} {name} keep={keep}"
        if plain[0] is None:
            assert got[0] is None, f"{what}: {got[0]}"
            ran += 1
        else:
            assert got[0] is not None and plain[0] in got[0], f"{what}: {got[0]} vs {plain[0]}"
        assert_same_grad(got[1], plain[1], what + " a")
        assert_same_grad(got[2], plain[2], what + " b")
    assert ran or layout == "bsc", f"no op with a working backward for {layout}"


# -- (5) nested record, (threads) another backward on the same graph ------------------------------
def shared_graph() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = (x * 2).sum()
    z = x * x
    return x, y, z, z.sum() + y


def test_a_record_nested_in_a_hook_keeps_to_its_own_backward() -> None:
    x, y, z, loss = shared_graph()
    inner: list[Recording] = []
    z.register_hook(lambda g: inner.append(gradviz.record(y, retain_graph=True)))
    outer = gradviz.record(loss, retain_graph=True)

    px, py, pz, plain = shared_graph()
    pz.register_hook(lambda g: torch.autograd.backward(py, retain_graph=True))
    plain.backward(retain_graph=True)

    assert_same_grad(x.grad, px.grad)
    assert len(inner) == 1
    for recording in (outer, inner[0]):
        each_node_once(recording)
        assert all(s.flow_ok and s.finished for s in recording.steps), recording
    assert len(outer.steps) == len(outer.graph.nodes)
    assert len(inner[0].steps) == len(inner[0].graph.nodes) == 3


def test_another_threads_backward_passes_through_gradvizs_hooks() -> None:
    """The user's own backward in another thread, on the same graph, runs while the
    recorded backward waits in a hook: it raises nothing and adds no step."""
    x = torch.linspace(-1, 1, 50, requires_grad=True)
    h = x
    for _ in range(30):
        h = torch.tanh(h * 1.1)
    middle = h
    loss = (h * 2).sum()
    want = torch.autograd.grad(loss, x, retain_graph=True)[0]
    main = threading.get_ident()
    other_done = threading.Event()
    other: dict[str, Any] = {}

    def other_backward() -> None:
        try:
            other["grad"] = torch.autograd.grad(loss, x, retain_graph=True)[0]
        except BaseException as error:  # reported by the assertions below
            other["error"] = error
        other_done.set()

    def wait_for_other(grad: torch.Tensor) -> None:
        if threading.get_ident() == main and "started" not in other:
            other["started"] = True
            thread = threading.Thread(target=other_backward)
            thread.start()
            assert other_done.wait(60)
            thread.join()

    handle = middle.register_hook(wait_for_other)
    recording = gradviz.record(loss, retain_graph=True)
    handle.remove()
    assert "error" not in other, other.get("error")
    assert torch.equal(other["grad"], want)
    assert x.grad is not None and torch.equal(x.grad, want)
    each_node_once(recording)
    assert len(recording.steps) == len(recording.graph.nodes)
    assert all(s.flow_ok for s in recording.steps)


# -- (6) gradviz's warnings and failures never stop the user's backward -------------------------
def mlp(seed: int = 0) -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    return model, model(torch.randn(5, 8)).pow(2).sum()


def plain_grads(seed: int = 0) -> list[torch.Tensor | None]:
    model, loss = mlp(seed)
    loss.backward()
    return [p.grad for p in model.parameters()]


def test_warnings_as_errors_do_not_stop_the_backward() -> None:
    model, loss = mlp()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(GradvizWarning, match="memory_budget"):
            gradviz.record(loss, keep="all", memory_budget=64)
    for got, want in zip([p.grad for p in model.parameters()], plain_grads(), strict=True):
        assert_same_grad(got, want)


def test_a_failure_inside_gradvizs_hook_is_reported_after_the_backward(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = [0]
    summarize = record_module.summarize

    def flaky(tensor: torch.Tensor, *args: Any) -> Any:
        calls[0] += 1
        if calls[0] == 3:
            raise ZeroDivisionError("a gradviz bug")
        return summarize(tensor, *args)

    monkeypatch.setattr(record_module, "summarize", flaky)
    model, loss = mlp()
    with pytest.warns(GradvizWarning, match="backward itself ran unchanged.*a gradviz bug"):
        gradviz.record(loss, keep="summary")
    for got, want in zip([p.grad for p in model.parameters()], plain_grads(), strict=True):
        assert_same_grad(got, want)


# -- memory: by bytes ---------------------------------------------------------------------------
def test_keep_auto_decides_by_bytes_not_node_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(record_module, "AUTO_ALL_MAX_BYTES", 1 << 20)
    big = torch.randn(1_000_000, requires_grad=True)  # 4 MB of float32, 4 nodes
    recording = gradviz.record((big * 2).sin().sum())
    assert len(recording.graph.nodes) == 4
    assert recording.keep == "summary" and kept_bytes(recording) == 0
    twin = big.detach().requires_grad_()
    want = torch.autograd.grad((twin * 2).sin().sum(), twin)[0]
    assert big.grad is not None and torch.equal(big.grad, want)

    small = torch.tensor(0.5, requires_grad=True)  # 601 nodes of scalars: a few KB
    h = small
    for _ in range(300):
        h = (h * 1.01).tanh()
    recording = gradviz.record(h)
    assert len(recording.graph.nodes) > 500
    assert recording.keep == "all" and 0 < kept_bytes(recording) < 1 << 20


@pytest.mark.slow
def test_keep_auto_keeps_no_copy_of_a_big_tensor() -> None:
    """The issue's case at full size: a 4-node graph on a 50-million-element tensor."""
    big = torch.zeros(50_000_000, requires_grad=True)
    recording = gradviz.record((big * 2).sin().sum())
    assert recording.keep == "summary" and kept_bytes(recording) == 0


def test_the_memory_budget_switches_to_summaries() -> None:
    model, loss = mlp()
    budget = 2000
    with pytest.warns(GradvizWarning, match="from step [0-9]+ on it kept summaries"):
        recording = gradviz.record(loss, keep="all", memory_budget=budget)
    assert 0 < kept_bytes(recording) <= budget
    assert isinstance(recording.steps[-1].grad_outputs[0], gradviz.Summary)
    assert all(s.flow_ok for s in recording.steps)
    for got, want in zip([p.grad for p in model.parameters()], plain_grads(), strict=True):
        assert_same_grad(got, want)


# -- (8) the user's own exceptions reach their except ----------------------------------------------
class UsersError(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(f"the user's error {code}")
        self.code = code


class UsersFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        raise UsersError(7)


def test_the_users_exception_from_their_hook_keeps_its_type() -> None:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: (_ for _ in ()).throw(UsersError(5)))
    try:
        gradviz.record(y.sum())
    except UsersError as error:  # the user's own except clause
        assert error.code == 5
        assert isinstance(error, BackwardFailed)  # and gradviz's context
        assert isinstance(error.recording, Recording) and error.node_id is not None
        assert isinstance(error.__cause__, UsersError) and error.__cause__.code == 5
        assert "MulBackward0" in str(error) and "the user's error 5" in str(error)
    else:
        pytest.fail("the user's error did not reach their except")


def test_the_users_exception_from_their_function_keeps_its_type() -> None:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(UsersError) as raised:
        gradviz.record(UsersFunction.apply(x).sum())
    assert raised.value.code == 7 and "UsersFunctionBackward" in str(raised.value)


def test_an_exception_type_that_cannot_be_combined_is_reraised_itself() -> None:
    """OSError has a layout of its own: no class can be both it and BackwardFailed. The
    user's very exception arrives, with gradviz's context as a note."""
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    mine = FileNotFoundError(2, "no such file")
    y.register_hook(lambda g: (_ for _ in ()).throw(mine))
    with pytest.raises(FileNotFoundError) as raised:
        gradviz.record(y.sum())
    assert raised.value is mine
    assert any("gradviz: backward failed" in note for note in raised.value.__notes__)


def test_pytorchs_own_errors_stay_backward_failed() -> None:
    c = torch.tensor(2.0, requires_grad=True) * 1.0
    e = c * torch.tensor(3.0, requires_grad=True)
    with torch.no_grad():
        c += 1
    with pytest.raises(BackwardFailed) as raised:
        gradviz.record(e)
    assert type(raised.value) is BackwardFailed and isinstance(raised.value, RuntimeError)


# -- arguments checked up front, and no hook blamed for them ------------------------------------
@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"gradient": torch.ones(4)}, "has shape \\(4,\\), but the root has shape \\(3,\\)"),
        ({"gradient": [2.0]}, "is a float, not a tensor"),
        ({"gradient": "ones"}, "takes a tensor or a sequence of tensors"),
        ({"gradient": torch.ones(3, dtype=torch.complex64)}, "is complex, but the root is real"),
        ({"memory_budget": "big"}, "memory_budget must be a number of bytes"),
        ({"memory_budget": -1}, "memory_budget must be a number of bytes"),
        ({"memory_budget": True}, "memory_budget must be a number of bytes"),
        ({"keep": "most"}, "keep must be"),
        ({"inputs": []}, "inputs= is empty"),
        ({"inputs": [torch.ones(3)]}, "does not require grad"),
        ({"inputs": ["x"]}, "is a str, not a tensor"),
    ],
)
def test_bad_arguments_get_a_clear_error_before_anything_runs(
    options: dict[str, Any], match: str
) -> None:
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    if "gradient" not in options:
        y = y.sum()
    with pytest.raises(InvalidArgument, match=match) as raised:
        gradviz.record(y, **options)
    assert "hook" not in str(raised.value)
    assert isinstance(raised.value, GradvizError)
    y.backward(torch.ones_like(y))  # nothing of gradviz stayed on the graph
    assert x.grad is not None and torch.equal(x.grad, torch.full((3,), 2.0))


def test_record_grad_checks_grad_outputs_too() -> None:
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(InvalidArgument, match="grad_outputs for root 0 has shape"):
        gradviz.record_grad(x * 2, x, grad_outputs=torch.ones(2))


# -- inputs= a generator ------------------------------------------------------------------------
def test_inputs_may_be_a_generator() -> None:
    model, loss = mlp(1)
    recording = gradviz.record(loss, inputs=model.parameters())
    assert recording.steps
    plain_model, plain_loss = mlp(1)
    plain_loss.backward(inputs=list(plain_model.parameters()))
    for got, want in zip(model.parameters(), plain_model.parameters(), strict=True):
        assert_same_grad(got.grad, want.grad)
    model, loss = mlp(1)
    grads, _ = gradviz.record_grad(loss, model.parameters())
    assert len(grads) == 4
    plain_model, plain_loss = mlp(1)
    want_grads = torch.autograd.grad(plain_loss, list(plain_model.parameters()))
    for got_grad, want_grad in zip(grads, want_grads, strict=True):
        assert_same_grad(got_grad, want_grad)


# -- tensors made under inference_mode can be named -------------------------------------------
def test_a_tensor_made_under_inference_mode_can_be_named() -> None:
    with torch.inference_mode():
        c = torch.ones(3) * 2
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x + c).pow(2).sum()
    graph = gradviz.trace(y, names={"c": c, "x": x})
    assert graph.tensor("c").shape == (3,)
    gradviz.record(y, names={"c": c, "x": x})
    twin = x.detach().requires_grad_()
    want = torch.autograd.grad((twin + c).pow(2).sum(), twin)[0]
    assert x.grad is not None and torch.equal(x.grad, want)

    with gradviz.watch() as w:
        v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        out = (v + c).pow(2).sum()
    assert w.trace(out).tensor("c").shape == (3,)
    w.record(out)
    assert v.grad is not None and torch.equal(v.grad, want)


# -- record() inside watch() adds none of gradviz's ops -----------------------------------------
def test_record_inside_watch_adds_no_op_to_the_forward_pass() -> None:
    with gradviz.watch() as w:
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        b = a * 3
        c = b.sin()
        loss = c.sum()
        ops = [op.name for op in w.forward.ops]
        gradviz.trace(loss)
        recording = gradviz.record(loss)
        assert [op.name for op in w.forward.ops] == ops
    assert len(ops) == 4 and len(recording.steps) == 4
    assert a.grad is not None and torch.equal(a.grad, torch.cos(a.detach() * 3) * 3)


# -- an Inf the engine's sum made is an origin -------------------------------------------------
@pytest.mark.parametrize("keep", ["all", "summary"])
def test_an_overflowing_fp16_sum_is_reported_as_the_origin(keep: str) -> None:
    def build() -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.tensor([1.0, 0.5], dtype=torch.float16, requires_grad=True)
        return (x * 40000 + x * 40000).sum(), x

    plain, plain_x = build()
    plain.backward()
    root, x = build()
    recording = gradviz.record(root, keep=keep)  # type: ignore[arg-type]
    assert_same_grad(x.grad, plain_x.grad)
    assert plain_x.grad is not None and torch.isinf(plain_x.grad).any()
    origins = recording.nonfinite_origins()
    assert [s.type_name for s in origins] == ["AccumulateGrad"]
    assert origins[0].nonfinite_sum == ((0, "Inf"),) and origins[0].nonfinite_origin == ()
    assert all(s.flow_ok for s in recording.steps)
    from gradviz.explain.steps import explain_step

    assert "sum of them overflowed" in explain_step(recording, origins[0].index).text


# -- (12) an in-place failure explains itself --------------------------------------------------
@pytest.fixture
def inplace_failure() -> Iterator[tuple[Any, torch.Tensor, int]]:
    with gradviz.watch() as w:
        a = torch.tensor(2.0, requires_grad=True)
        c = a * 1.0
        d = torch.tensor(3.0, requires_grad=True)
        e = c * d
        with torch.no_grad():
            c += 1
            line = sys._getframe().f_lineno - 1  # the line of `c += 1`
    yield w, e, line


def test_an_inplace_failure_under_watch_says_what_happened(
    inplace_failure: tuple[Any, torch.Tensor, int],
) -> None:
    w, e, line = inplace_failure
    with pytest.raises(BackwardFailed) as raised:
        w.record(e, retain_graph=True)
    message = str(raised.value)
    assert type(raised.value) is BackwardFailed
    assert "modified by an inplace operation" in message  # PyTorch's text stays
    assert "MulBackward0" in message and "saved c (as `self`) at version 0" in message
    assert "now at version 1" in message
    assert f"`c += 1` ({Path(__file__).name}:{line})" in message
    report = gradviz.explain_inplace(raised.value)
    assert report.failing and report.failing[0].tensor_name == "c"


def test_explain_inplace_accepts_pytorchs_plain_runtime_error(
    inplace_failure: tuple[Any, torch.Tensor, int],
) -> None:
    _, e, line = inplace_failure
    with pytest.raises(RuntimeError) as raised:
        e.backward()
    report = gradviz.explain_inplace(raised.value)
    (finding,) = report.failing
    assert finding.tensor_name == "c" and finding.node_type == "MulBackward0"
    assert (finding.version_saved, finding.version_now) == (0, 1)
    assert f"`c += 1` ({Path(__file__).name}:{line})" in finding.message


def test_explain_inplace_on_an_unwatched_runtime_error_says_what_it_needs() -> None:
    c = torch.tensor(2.0, requires_grad=True) * 1.0
    e = c * torch.tensor(3.0, requires_grad=True)
    with torch.no_grad():
        c += 1
    with pytest.raises(RuntimeError) as raised:
        e.backward()
    with pytest.raises(ValueError, match=r"no gradviz.watch\(\) that saw"):
        gradviz.explain_inplace(raised.value)


# -- the same under the CLI, which records the script's own backward ---------------------------
CATCHING_SCRIPT = """
import torch
from torch import nn


class Stop(Exception):
    pass


torch.manual_seed(0)
model = nn.Linear(3, 2)
loss = model(torch.randn(4, 3)).pow(2).sum()
handle = model.weight.register_hook(lambda g: (_ for _ in ()).throw(Stop("enough")))
try:
    loss.backward(retain_graph=True)
except Stop:
    caught = "caught"
handle.remove()
loss.backward(inputs=model.parameters())
torch.save({"caught": caught, "grads": [p.grad.clone() for p in model.parameters()]}, "r.pt")
"""


def test_under_the_cli_the_scripts_own_except_and_generator_inputs_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gradviz.cli import main

    path = tmp_path / "train.py"
    path.write_text(CATCHING_SCRIPT, encoding="utf-8")
    plain = tmp_path / "plain"
    plain.mkdir()
    subprocess.run([sys.executable, str(path)], cwd=plain, check=True, timeout=120)
    out = tmp_path / "out"
    monkeypatch.chdir(tmp_path)
    assert main(["render", str(path), "-o", str(out), "--format", "json", "--root", "loss"]) == 0
    got, want = torch.load(tmp_path / "r.pt"), torch.load(plain / "r.pt")
    assert got["caught"] == want["caught"] == "caught"
    for got_grad, want_grad in zip(got["grads"], want["grads"], strict=True):
        assert_same_grad(got_grad, want_grad)
