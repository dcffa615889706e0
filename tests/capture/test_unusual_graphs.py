"""Every kind of node PyTorch makes: traced, drawn by dot, recorded bitwise, stepped, told.

Each case builds the same computation twice: once plainly (PyTorch's own gradients) and once
under ``gradviz.record``; the gradients must be ``torch.equal``. Then the flow check, the
stepper data, the offline page and every step's explanation must work. NaN and Inf: where
they first appear is found, highlighted and named, for keep="all" and keep="summary".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.autograd.function import once_differentiable
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.checkpoint import checkpoint

import gradviz
from gradviz.explain.steps import describe_step
from gradviz.model.recording import Recording
from gradviz.model.summarize import SMALL_NUMEL, summarize
from gradviz.model.values import Summary
from gradviz.render.theme import THEMES
from gradviz.replay.frames import classes_at, replay_data
from gradviz.replay.styles import step_css

# A case builds its graph afresh (seeded) and returns (roots, leaves whose .grad to compare).
Built = tuple[list[torch.Tensor], list[torch.Tensor]]
Case = Callable[[], Built]


# -- the cases -----------------------------------------------------------------------------------
def copy_slices() -> Built:
    """Slice assignments in a row: overlapping, nested views, an in-place op on a column."""
    torch.manual_seed(0)
    x = torch.randn(4, 4, requires_grad=True)
    w = torch.randn(4, requires_grad=True)
    y = x * 1
    y[0] = w * 2
    y[1:3, 1:3] = w[:2].outer(w[2:])
    y[0:2, 0:2] = y[1:3, 1:3] * 3  # overlaps the previous assignment
    inner = y[2:]
    inner[:, 0] = w[:2].sin()  # through a view of a view
    y[:, 3].mul_(w)
    return [(y * y).sum()], [x, w]


class CubeAndArgmax(torch.autograd.Function):
    """x³ (saves x) and the argmax, marked non-differentiable."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        ctx.save_for_backward(x)
        index = x.argmax()
        ctx.mark_non_differentiable(index)
        return x**3, index

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor, _index_grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return 3 * x * x * grad


class Scaled(torch.autograd.Function):
    """x·s with a once-differentiable backward that uses the saved scale."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(scale)
        return x * scale

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (scale,) = ctx.saved_tensors
        return grad * scale, None


def custom_functions() -> Built:
    torch.manual_seed(1)
    x = torch.randn(5, requires_grad=True)
    cube, index = CubeAndArgmax.apply(x)
    assert not index.requires_grad
    out = Scaled.apply(cube, torch.full((5,), 0.5)) * cube[index]
    return [out.sum()], [x]


def checkpointed(reentrant: bool) -> Case:
    def build() -> Built:
        torch.manual_seed(2)
        x = torch.randn(3, requires_grad=True)
        w = torch.randn(3, requires_grad=True)
        inner = checkpoint(lambda a, b: (a * b).sin() * a, x, w, use_reentrant=reentrant)
        return [(inner * w).sum()], [x, w]

    return build


def func_transforms() -> Built:
    """functional_call, vmap, jvp and vjp results that carry a grad_fn."""
    torch.manual_seed(3)
    linear = torch.nn.Linear(3, 2)
    x = torch.randn(4, 3, requires_grad=True)
    out = torch.func.functional_call(linear, dict(linear.named_parameters()), (x,))
    mapped = torch.func.vmap(lambda row: (row * row).sum())(x)
    _, tangent = torch.func.jvp(torch.sin, (x,), (torch.ones_like(x),))
    _, vjp_fn = torch.func.vjp(torch.exp, x)
    (pulled,) = vjp_fn(torch.ones_like(x))
    total = out.sum() + mapped.sum() + tangent.sum() + pulled.sum()
    return [total], [x, linear.weight, linear.bias]


def complex_values() -> Built:
    """A complex leaf, complex intermediates, a real loss (|z|² and the real part)."""
    torch.manual_seed(4)
    z = torch.randn(3, dtype=torch.cfloat, requires_grad=True)
    big = torch.randn(20, dtype=torch.cdouble, requires_grad=True)  # summarized, not kept whole
    w = z * (1 + 2j)
    u = (big * 1j).exp()
    return [(w.abs() ** 2).sum() + torch.view_as_real(w).sum() + u.real.sum()], [z, big]


def sparse_coo() -> Built:
    torch.manual_seed(5)
    values = torch.randn(3, requires_grad=True)
    indices = torch.tensor([[0, 1, 1], [2, 0, 2]])
    matrix = torch.sparse_coo_tensor(indices, values, (2, 3), check_invariants=True)
    dense = torch.randn(3, 2, requires_grad=True)
    return [torch.sparse.mm(matrix, dense).sum()], [values, dense]


def sparse_csr() -> Built:
    torch.manual_seed(6)
    matrix = torch.randn(3, 3).relu().to_sparse_csr().requires_grad_()
    dense = torch.randn(3, 2, requires_grad=True)
    return [(matrix @ dense).sum()], [matrix, dense]


def sparse_embedding() -> Built:
    """nn.Embedding(sparse=True): a sparse .grad (a big table, so it is summarized)."""
    torch.manual_seed(7)
    table = torch.nn.Embedding(50, 4, sparse=True)
    rows = table(torch.tensor([1, 2, 1, 40]))
    return [(rows * rows).sum()], [table.weight]


def zero_size() -> Built:
    torch.manual_seed(8)
    empty = torch.randn(0, 3, requires_grad=True)
    y = torch.randn(2, requires_grad=True)
    return [(empty * 2).sum() + (y * y).sum() + empty.mean(0).nansum()], [empty, y]


def integer_and_boolean_constants() -> Built:
    torch.manual_seed(9)
    x = torch.randn(3, requires_grad=True)
    counts = torch.tensor([1, 2, 3])
    mask = torch.tensor([True, False, True])
    return [((x * counts).where(mask, x) + mask).sum()], [x]


CASES: dict[str, Case] = {
    "copy-slices": copy_slices,
    "custom-function": custom_functions,
    "checkpoint-reentrant": checkpointed(True),
    "checkpoint-non-reentrant": checkpointed(False),
    "torch-func": func_transforms,
    "complex": complex_values,
    "sparse-coo": sparse_coo,
    "sparse-csr": sparse_csr,
    "sparse-embedding": sparse_embedding,
    "zero-size": zero_size,
    "int-bool-constants": integer_and_boolean_constants,
}


# -- checks shared by every case -------------------------------------------------------------
def plain_grads(build: Case) -> list[torch.Tensor | None]:
    roots, leaves = build()
    torch.autograd.backward(roots)
    return [leaf.grad for leaf in leaves]


def assert_same(got: torch.Tensor | None, want: torch.Tensor | None) -> None:
    assert (got is None) == (want is None)
    if got is None or want is None:
        return
    assert got.layout == want.layout and got.dtype == want.dtype
    if got.layout != torch.strided:  # sparse: the same stored indices and values
        got, want = got.to_sparse().coalesce(), want.to_sparse().coalesce()
        assert torch.equal(got.indices(), want.indices())
        got, want = got.values(), want.values()
    assert torch.equal(got, want)


def assert_flow_checked_or_says_why(recording: Recording) -> None:
    for step in recording.steps:
        assert step.flow_ok, step.flow_note
        assert step.flow_checked or step.flow_note.startswith("not verifiable at "), step


def assert_replays(recording: Recording, tmp_path: Path) -> None:
    """Stepper data, the offline page and every step's panel text."""
    data = replay_data(recording)
    assert data["count"] == len(recording.steps) + 1
    page = recording.save(tmp_path / "x.html").read_text(encoding="utf-8")
    assert "gv-replay-data" in page and "<svg" in page
    for index in range(len(recording) + 1):
        panel = describe_step(recording, index)
        assert isinstance(panel["narration"], str) and panel["narration"]
        if index:
            assert panel["type"] == recording.steps[index - 1].type_name


@pytest.mark.needs_dot
@pytest.mark.parametrize("keep", ["all", "summary"])
@pytest.mark.parametrize("name", list(CASES))
def test_unusual_graph(name: str, keep: str, tmp_path: Path) -> None:
    build = CASES[name]
    want = plain_grads(build)
    roots, leaves = build()
    svg = gradviz.trace(*roots).svg()
    assert svg.count('class="node') >= len(leaves)
    recording = gradviz.record(*roots, keep=keep)  # type: ignore[arg-type]
    for leaf, expected in zip(leaves, want, strict=True):
        assert_same(leaf.grad, expected)
    assert recording.order == recording.predicted_order()
    assert_flow_checked_or_says_why(recording)
    assert_replays(recording, tmp_path)


# -- what is special about some of them -----------------------------------------------------------
def test_copy_slices_chain_is_recorded_node_by_node() -> None:
    roots, _ = copy_slices()
    recording = gradviz.record(*roots)
    kinds = [step.type_name for step in recording.steps]
    assert kinds.count("CopySlices") == 5
    assert {"AsStridedBackward0", "SelectBackward0"} & set(kinds) or "SliceBackward0" in kinds


def test_custom_function_nodes_keep_their_names_and_skip_the_index() -> None:
    roots, (x,) = custom_functions()
    recording = gradviz.record(*roots)
    kinds = {step.type_name for step in recording.steps}
    assert {"CubeAndArgmaxBackward", "ScaledBackward"} <= kinds
    cube = next(s for s in recording.steps if s.type_name == "CubeAndArgmaxBackward")
    # the argmax output is non-differentiable: nothing arrives there
    assert len(cube.grad_outputs) == 2 and cube.grad_outputs[1] is None
    assert isinstance(cube.grad_inputs[0], torch.Tensor)
    assert torch.equal(cube.grad_inputs[0], x.grad)  # type: ignore[arg-type]


def test_complex_summaries_show_the_norm_and_values_not_min_max() -> None:
    torch.manual_seed(10)
    small = torch.randn(3, dtype=torch.cfloat)
    big = torch.randn(40, dtype=torch.cdouble)
    for tensor in (small, big):
        summary = summarize(tensor)
        assert summary.min is None and summary.max is None and summary.mean is None
        assert summary.norm == pytest.approx(float(torch.linalg.vector_norm(tensor)), rel=1e-6)
        assert summary.finite is True
        assert summary.complete or summary.short() == f"{tensor.numel()} ‖{summary.norm:.4g}‖"
    assert complex(summarize(small).values[1]) == complex(small[1].item())  # kept exactly
    text = summarize(big).text()
    first = big[0].item()
    assert text.startswith("norm ") and f"{first.real:.4g}" in text and "j" in text
    assert "(" not in summarize(small).text()  # '0.5-1.2j', not Python's '(0.5-1.2j)'


def test_complex_intermediate_gradients_match_pytorch() -> None:
    torch.manual_seed(11)
    z = torch.randn(3, dtype=torch.cfloat, requires_grad=True)
    w = z * (1 + 2j)
    loss = (w.abs() ** 2).sum()
    (want,) = torch.autograd.grad(loss, w, retain_graph=True)
    recording = gradviz.record(loss)
    producer = next(s for s in recording.steps if s.type_name == "MulBackward0")
    assert torch.equal(producer.grad_outputs[0], want)  # type: ignore[arg-type]


def test_flow_check_sees_a_hook_that_conjugates_a_complex_gradient() -> None:
    """Only the imaginary part changes: comparing real parts (a float cast) would miss it."""
    z = torch.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    w = z * (2 + 1j)
    w.register_hook(lambda g: g.conj())
    recording = gradviz.record((w.abs() ** 2).sum() + torch.view_as_real(w).sum())
    assert [s.type_name for s in recording.steps if not s.flow_ok] == ["MulBackward0"]


def test_sparse_summaries_count_the_zeros_not_stored() -> None:
    torch.manual_seed(12)
    dense = torch.zeros(30, 4)
    dense[3] = torch.randn(4)
    dense[7] = torch.randn(4).abs() + 1
    for sparse in (dense.to_sparse(), dense.to_sparse_csr()):
        summary = summarize(sparse)
        want = summarize(dense)
        assert (summary.min, summary.max) == (want.min, want.max)
        assert summary.mean == pytest.approx(want.mean)
        assert summary.norm == pytest.approx(want.norm)


def test_sparse_embedding_grad_is_recorded_sparse() -> None:
    roots, (weight,) = sparse_embedding()
    recording = gradviz.record(*roots, keep="all")
    leaf_step = next(s for s in recording.steps if s.type_name == "AccumulateGrad")
    assert weight.grad is not None and weight.grad.layout == torch.sparse_coo
    assert_same(leaf_step.leaf_grad_after, weight.grad)  # type: ignore[arg-type]
    summary = summarize(weight.grad)
    assert summary.max == pytest.approx(float(weight.grad.to_dense().max()))


def test_empty_tensors_summarize_as_empty() -> None:
    for tensor in (torch.zeros(0), torch.zeros(0, 3, dtype=torch.float16), torch.zeros(2, 0)):
        summary = summarize(tensor)
        assert summary.numel == 0 and summary.complete and summary.values == ()
        assert summary.finite is True
        assert summary.text() == "[]"


def test_integer_and_boolean_inputs_through_watch() -> None:
    with gradviz.watch() as watched:
        torch.manual_seed(13)
        x = torch.randn(3, requires_grad=True)
        counts = torch.tensor([1, 2, 3])
        mask = torch.tensor([True, False, True])
        loss = ((x * counts).where(mask, x) + mask).sum()
    recording = watched.record(loss)
    _, (plain_x,) = integer_and_boolean_constants()
    torch.manual_seed(13)
    plain_x = torch.randn(3, requires_grad=True)
    ((plain_x * counts).where(mask, plain_x) + mask).sum().backward()
    assert torch.equal(x.grad, plain_x.grad)  # type: ignore[arg-type]
    forward = recording.graph.forward
    assert forward is not None
    assert forward.tensor("counts").data.values == (1, 2, 3)  # type: ignore[union-attr]
    assert forward.tensor("mask").data.values == (True, False, True)  # type: ignore[union-attr]
    for index in range(len(recording) + 1):
        assert describe_step(recording, index)["narration"]


# -- torch.compile: one compile per session ----------------------------------------------------
@pytest.fixture(scope="module")
def compiled() -> tuple[Callable[..., torch.Tensor], float]:
    """A tiny compiled function and what its first call cost (the compile)."""
    torch._dynamo.reset()  # type: ignore[no-untyped-call]
    function = torch.compile(lambda a, b: ((a * b).sin() * a).sum())
    start = time.perf_counter()
    function(torch.ones(3, requires_grad=True), torch.ones(3))
    return function, time.perf_counter() - start


@pytest.mark.needs_dot
def test_torch_compile_result(
    compiled: tuple[Callable[..., torch.Tensor], float], tmp_path: Path
) -> None:
    function, cost = compiled
    print(f"\n[torch.compile] first call (the compile) took {cost:.1f} s")
    torch.manual_seed(14)
    x, w = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    function(x, w).backward()
    want = (x.grad, w.grad)
    x2, w2 = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    root = function(x2, w2)
    assert "CompiledFunctionBackward" in gradviz.trace(root).svg()
    recording = gradviz.record(root)
    assert torch.equal(x2.grad, want[0]) and torch.equal(w2.grad, want[1])  # type: ignore[arg-type]
    assert recording.steps[0].type_name == "CompiledFunctionBackward"
    assert_flow_checked_or_says_why(recording)
    assert_replays(recording, tmp_path)


# -- another device: meta (no GPU here) ----------------------------------------------------------
class CpuCopies(TorchDispatchMode):
    """Every tensor with new memory (not a view of an input) an op puts on the CPU."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[tuple[str, int]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        inputs = tree_leaves((args, kwargs))
        shared = {_memory(t) for t in inputs if isinstance(t, torch.Tensor)}
        for value in tree_leaves(out):
            on_cpu = isinstance(value, torch.Tensor) and value.device.type == "cpu"
            if on_cpu and _memory(value) not in shared:
                self.sizes.append((str(func), value.numel()))
        return out


def _memory(tensor: torch.Tensor) -> int:
    return 0 if tensor.is_meta else tensor.untyped_storage().data_ptr()


@contextmanager
def no_big_cpu_tensors(limit: int) -> Iterator[CpuCopies]:
    with CpuCopies() as mode:
        yield mode
    big = [(op, n) for op, n in mode.sizes if n > limit]
    assert not big, f"full-size CPU tensors were made: {big}"


def meta_graph() -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(256, 256, device="meta", requires_grad=True)
    return (x * x).sin().sum(), x


@pytest.mark.needs_dot
@pytest.mark.parametrize("keep", ["all", "summary"])
def test_meta_graph_records_and_says_values_are_not_available(keep: str, tmp_path: Path) -> None:
    plain_root, plain_x = meta_graph()
    plain_root.backward()
    root, x = meta_graph()
    assert "MulBackward0" in gradviz.trace(root).svg()
    with no_big_cpu_tensors(limit=0):  # nothing of a meta tensor may be read onto the CPU
        recording = gradviz.record(root, keep=keep)  # type: ignore[arg-type]
    assert x.grad is not None and plain_x.grad is not None
    assert x.grad.is_meta and x.grad.shape == plain_x.grad.shape
    unchecked = [s for s in recording.steps if not s.flow_checked]
    assert unchecked and all(s.flow_ok for s in recording.steps)
    assert all("values are not available" in s.flow_note for s in unchecked)
    assert "not verifiable" in repr(recording)
    assert "values not available" in describe_step(recording, 2)["received"][0]
    assert recording.nonfinite_origins() == []  # unknown is never reported as NaN
    assert_replays(recording, tmp_path)


def test_meta_summary_reads_nothing() -> None:
    summary = summarize(torch.empty(1000, 1000, device="meta"))
    assert not summary.available and summary.finite is None
    assert summary.text() == "1000×1000 float32: values not available"
    assert Summary.from_dict(summary.to_dict()) == summary


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.randn(300, 300).half(),  # no NumPy fast path: torch reductions
        lambda: torch.randn(300, 300).bfloat16(),
        lambda: torch.randn(300, 600)[:, ::2],  # float32 that does not fill its memory
        lambda: torch.randn(300, 300, dtype=torch.cfloat),
    ],
)
def test_summaries_reduce_in_place_without_a_full_size_copy(
    make: Callable[[], torch.Tensor],
) -> None:
    """The reductions run on the tensor (on its device); only a few numbers come out."""
    tensor = make()
    with no_big_cpu_tensors(limit=SMALL_NUMEL):
        summary = summarize(tensor)
    wide = tensor.to(torch.complex128 if tensor.is_complex() else torch.float64)
    assert summary.norm == pytest.approx(float(torch.linalg.vector_norm(wide)), rel=1e-3)
    if not tensor.is_complex():
        assert summary.max == float(tensor.max()) and summary.min == float(tensor.min())
        assert summary.mean == pytest.approx(float(wide.mean()), abs=1e-3)


# -- NaN and Inf: where they first appear ------------------------------------------------------
def sqrt_at_zero() -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.tensor([0.0, 1.0, 4.0], requires_grad=True)
    return (x.sqrt() * 3).sum(), x


def log_of_zero() -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.tensor([0.0, 2.0, 3.0], requires_grad=True)
    return (x * 2).log().mul(3).sum(), x


def zero_over_zero() -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.tensor([0.0, 1.0], requires_grad=True)
    return (x / x.square()).mul(0.5).sum(), x


def nan_input() -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.tensor([float("nan"), 1.0, 2.0], requires_grad=True)
    return (x.detach() * x).sum() + x.sum(), x


NONFINITE = {
    # case: (the node where it first appears, what it sent)
    "sqrt-at-zero": (sqrt_at_zero, "SqrtBackward0", "Inf"),
    "log-of-zero": (log_of_zero, "LogBackward0", "Inf"),
    "zero-over-zero": (zero_over_zero, "DivBackward0", "NaN and Inf"),
    "nan-input": (nan_input, "MulBackward0", "NaN"),
}


def _kind(tensor: torch.Tensor) -> str:
    words = [w for w, bad in (("NaN", tensor.isnan().any()), ("Inf", tensor.isinf().any())) if bad]
    return " and ".join(words)


@pytest.mark.parametrize("keep", ["all", "summary"])
@pytest.mark.parametrize("name", list(NONFINITE))
def test_first_nonfinite_gradient_is_found(name: str, keep: str) -> None:
    build, node_type, kinds = NONFINITE[name]
    plain_root, plain_x = build()
    plain_root.backward()
    root, x = build()
    recording = gradviz.record(root, keep=keep)  # type: ignore[arg-type]
    assert x.grad is not None and plain_x.grad is not None
    assert torch.equal(x.grad.isnan(), plain_x.grad.isnan())
    assert torch.equal(x.grad.nan_to_num(), plain_x.grad.nan_to_num())
    origins = recording.nonfinite_origins()
    assert [s.type_name for s in origins] == [node_type]
    origin = origins[0]
    # what it sent, as PyTorch computed it, is non-finite; what it received was finite
    said = " ".join(kind for _, kind in origin.nonfinite_origin)
    assert " and ".join(k for k in ("NaN", "Inf") if k in said) == kinds
    for slot, kind in origin.nonfinite_origin:
        sent = origin.grad_inputs[slot]
        if isinstance(sent, torch.Tensor):
            assert _kind(sent) == kind
        else:
            assert sent is not None and sent.finite is False
            assert (sent.nan, sent.inf) == ("NaN" in kind, "Inf" in kind)
    # every later step that passed it on received it: none of them is an origin
    assert all(s.nonfinite_origin == () for s in recording.steps if s is not origin)
    text = describe_step(recording, origin.index)
    verb = "appear" if " and " in kinds else "appears"
    assert f"{kinds} first {verb} here: {node_type} sent" in text["narration"]
    assert "everything it received was finite" in text["narration"]
    assert {item["kind"] for item in text["nonfinite"]} <= {"NaN", "Inf", "NaN and Inf"}
    assert all(s.flow_ok for s in recording.steps)
    if keep == "all":  # the elementwise check copes with NaN (equal_nan)
        assert all(s.flow_checked for s in recording.steps)


def test_nonfinite_origin_matches_the_gradient_pytorch_computes_there() -> None:
    """log of 0: LogBackward0 sends 1/u·g = inf; MulBackward0 then passes inf on, and an
    autograd.grad at the log's input says the same."""
    x = torch.tensor([0.0, 2.0, 3.0], requires_grad=True)
    u = x * 2
    loss = u.log().mul(3).sum()
    (want,) = torch.autograd.grad(loss, u, retain_graph=True)
    recording = gradviz.record(loss)
    (origin,) = recording.nonfinite_origins()
    assert origin.type_name == "LogBackward0" and want.isinf().any()
    assert torch.equal(origin.grad_inputs[0], want)  # type: ignore[arg-type]
    (later,) = [s for s in recording.steps[origin.index :] if s.type_name == "MulBackward0"]
    assert later.grad_outputs[0].isinf().any()  # type: ignore[union-attr]
    assert later.nonfinite_origin == ()  # it only passed the Inf on


def test_finite_backward_has_no_origins() -> None:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    assert gradviz.record((x.sqrt() * x).sum()).nonfinite_origins() == []


def test_huge_finite_gradients_are_not_origins() -> None:
    """Origins are screened with one batched norm per dtype; a norm that overflows on huge
    but finite gradients (3e38 in float32) must not pass for an Inf."""
    w = torch.tensor([1.0, 1.0, 1.0, 1.0], requires_grad=True)
    huge = torch.full((4,), 3e38)
    recording = gradviz.record((w * huge).sum())
    assert torch.isfinite(w.grad).all() and torch.linalg.vector_norm(w.grad).isinf()  # type: ignore[arg-type]
    assert recording.nonfinite_origins() == []
    v = torch.tensor([1.0, 1.0], requires_grad=True)  # an Inf among huge values is found
    (origin,) = gradviz.record((v * torch.tensor([3e38, 1.0])).mul(10).sum()).nonfinite_origins()
    assert origin.type_name == "MulBackward0" and origin.grad_inputs[0].isinf().any()  # type: ignore[union-attr]


def test_summaries_carry_the_nonfinite_fact_on_every_path() -> None:
    nan, inf = float("nan"), float("inf")
    for values in ([1.0, nan], [inf, 1.0], [nan, -inf]):
        for size in (2, 1000):  # every value kept, and the statistics path
            tensor = torch.tensor(values * (size // 2))
            strided = tensor.repeat_interleave(2)[::2]  # the same values, not dense
            for variant in (tensor, tensor.double(), tensor.half(), strided):
                summary = summarize(variant)
                assert summary.nan == bool(variant.isnan().any()), (values, size, variant.dtype)
                assert summary.inf == bool(variant.isinf().any()), (values, size, variant.dtype)
                assert summary.finite is False
                assert (
                    Summary.from_dict(summary.to_dict()) == summary or summary.mean != summary.mean
                )
    assert summarize(torch.ones(1000)).finite is True


@pytest.mark.needs_dot
@pytest.mark.parametrize("keep", ["all", "summary"])
def test_nonfinite_origin_is_highlighted_from_its_step_on(keep: str, tmp_path: Path) -> None:
    root, _ = sqrt_at_zero()
    recording = gradviz.record(root, keep=keep)  # type: ignore[arg-type]
    (origin,) = recording.nonfinite_origins()
    data = replay_data(recording)
    prefix, schedule = data["prefix"], data["schedule"]
    node_id = f"{prefix}_{origin.node_id}"
    edge_id = f"{prefix}_e_{origin.node_id}_0"
    assert schedule["nonfinite"] == {node_id: origin.index, edge_id: origin.index}
    for index in range(len(recording) + 1):
        classes = classes_at(schedule, index)
        marked = {k for k, v in classes.items() if "gv_nonfinite" in v.split()}
        assert marked == ({node_id, edge_id} if index >= origin.index else set()), index
    before, at = recording.svg(step=origin.index - 1), recording.svg(step=origin.index)
    assert "gv_nonfinite" not in before.split("</style>", 1)[1]
    assert f'id="{node_id}" class="node gv_node gv_active gv_nonfinite"' in at
    border = THEMES["default"].step.nonfinite_border
    assert f".gv_nonfinite>path,.gv_nonfinite>polygon{{stroke:{border}" in step_css(
        THEMES["default"]
    )
    assert all(theme.step.nonfinite_border for theme in THEMES.values())
    page = recording.save(tmp_path / "x.html").read_text(encoding="utf-8")
    assert '"nonfinite"' in page and "gv_nonfinite" in page
