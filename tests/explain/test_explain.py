"""The narration of each backward step: the chain rule in words, with PyTorch's numbers.

Every expected number here is computed by PyTorch itself (``torch.autograd.grad`` on fresh
leaves holding the same values, or ``.grad`` after a plain backward); only the inputs are
typed in.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import pytest
import torch
import torch.nn.functional as F

import gradviz
from gradviz.capture.record import Keep
from gradviz.explain.steps import describe_step, narrate
from gradviz.model.recording import Recording
from gradviz.model.values import format_number
from gradviz.teaching.lessons import lesson

Fn = Callable[..., torch.Tensor]


# -- helpers -----------------------------------------------------------------------------------
def text(value: torch.Tensor | float | None) -> str:
    """How a number or a small tensor reads in a narration: '8', '[1, 2]', '[[1, 2], [3, 4]]'."""
    assert value is not None, "PyTorch computed no gradient here"
    if not isinstance(value, torch.Tensor):
        return format_number(float(value))
    if value.dim() == 0:
        return format_number(float(value))
    return "[" + ", ".join(text(row) for row in value) + "]"


def text_ready(value: torch.Tensor | None) -> torch.Tensor:
    assert value is not None, "PyTorch computed no gradient here"
    return value


def product(g: torch.Tensor, local: torch.Tensor) -> str:
    """'18·0.5' or '18·(-4)': how a scalar chain-rule product is written."""
    right = text(local)
    return f"{text(g)}·{'(' + right + ')' if right.startswith('-') else right}"


def leaves(*values: torch.Tensor) -> list[torch.Tensor]:
    """Fresh leaves with the same values, for asking PyTorch what the gradients are."""
    return [v.detach().clone().requires_grad_(True) for v in values]


def torch_grads(
    fn: Fn, values: Sequence[torch.Tensor], seed: torch.Tensor
) -> tuple[torch.Tensor, ...]:
    """What PyTorch sends to each input of ``fn`` when ``seed`` enters its output."""
    inputs = leaves(*values)
    return torch.autograd.grad(fn(*inputs), inputs, grad_outputs=seed)


def steps_of(recording: Recording, type_name: str) -> list[int]:
    return [s.index for s in recording.steps if s.type_name == type_name]


def only_step(recording: Recording, type_name: str) -> int:
    found = steps_of(recording, type_name)
    assert len(found) == 1, f"{type_name}: {[s.type_name for s in recording.steps]}"
    return found[0]


# -- the ten-op lesson ---------------------------------------------------------------------------
@pytest.fixture
def ten_ops() -> tuple[Recording, dict[str, torch.Tensor]]:
    built = lesson("ten-ops").build()
    return gradviz.record(*built.roots, names=built.names), built.names


def ten_op_truth() -> dict[str, torch.Tensor]:
    """The lesson's gradients, from a plain PyTorch run with retained intermediate grads."""
    names = lesson("ten-ops").build().names
    for key in ("g", "i", "j"):
        names[key].retain_grad()
    torch.autograd.backward(names["k"])
    return {
        "i": names["i"].detach(),
        "j": names["j"].detach(),
        "g": names["g"].detach(),
        "h": names["h"].detach(),
        "dk_dj": text_ready(names["j"].grad).detach(),
        "dk_di": text_ready(names["i"].grad).detach(),
        "dk_dg": text_ready(names["g"].grad).detach(),
        "h_grad": text_ready(names["h"].grad).detach(),
        "c_grad": text_ready(names["c"].grad).detach(),
    }


def test_ten_ops_mul_sentence(ten_ops: tuple[Recording, dict[str, torch.Tensor]]) -> None:
    recording, _ = ten_ops
    t = ten_op_truth()
    seed = torch.tensor(1.0)
    to_j, to_i = torch_grads(lambda j, i: j * i, [t["j"], t["i"]], seed)
    local_j, local_i = torch_grads(lambda j, i: j * i, [t["j"], t["i"]], torch.tensor(1.0))
    sentence = (
        f"got ∂k/∂k = {text(seed)}; ∂(j·i)/∂j = i = {text(local_j)} → sends {text(to_j)} to "
        f"AddBackward0; ∂(j·i)/∂i = j = {text(local_i)} → sends {text(to_i)} to DivBackward0"
    )
    assert sentence in narrate(recording, steps_of(recording, "MulBackward0")[0])
    assert text(t["i"]) == text(local_j) and text(t["j"]) == text(local_i)


def test_ten_ops_div_received_18_sends_9_and_minus_72(
    ten_ops: tuple[Recording, dict[str, torch.Tensor]],
) -> None:
    recording, _ = ten_ops
    t = ten_op_truth()
    index = only_step(recording, "DivBackward0")
    words = narrate(recording, index)
    to_g, to_h = torch_grads(lambda g, h: g / h, [t["g"], t["h"]], t["dk_di"])
    local_g, local_h = torch_grads(lambda g, h: g / h, [t["g"], t["h"]], torch.tensor(1.0))
    # what DivBackward0 got: one stream through j = i + h, one straight from k = j * i
    via_add = torch_grads(lambda i, h: i + h, [t["i"], t["h"]], t["dk_dj"])[0]
    via_mul = torch_grads(lambda j, i: j * i, [t["j"], t["i"]], torch.tensor(1.0))[1]
    received = (
        f"got ∂k/∂i = {text(via_add)} from AddBackward0 + {text(via_mul)} from MulBackward0 "
        f"= {text(t['dk_di'])}"
    )
    assert received in words
    assert f"∂(g/h)/∂g = 1/h = {text(local_g)} → sends {product(t['dk_di'], local_g)}" in words
    assert f"= {text(to_g)} to MulBackward0" in words
    assert f"∂(g/h)/∂h = -g/h² = {text(local_h)}" in words
    assert f"{product(t['dk_di'], local_h)} = {text(to_h)} to AccumulateGrad(h)" in words
    assert text(to_g) == text(t["dk_dg"])
    info = describe_step(recording, index)
    assert info["op"] == "div" and info["checked"] is True
    assert len(info["formula"]) == 2


def test_ten_ops_accumulate_grad_sums_the_two_streams(
    ten_ops: tuple[Recording, dict[str, torch.Tensor]],
) -> None:
    recording, _ = ten_ops
    t = ten_op_truth()
    from_div = torch_grads(lambda g, h: g / h, [t["g"], t["h"]], t["dk_di"])[1]
    from_add = torch_grads(lambda i, h: i + h, [t["i"], t["h"]], t["dk_dj"])[1]
    h_step = next(
        s.index for s in recording.steps if narrate(recording, s.index).startswith("Accumulat")
    )
    words = narrate(recording, h_step)
    expected = (
        f"AccumulateGrad(h): got ∂k/∂h = {text(from_div)} from DivBackward0 + "
        f"{text(from_add)} from AddBackward0 = {text(t['h_grad'])}; adds it to h.grad: "
        f"None → {text(t['h_grad'])}."
    )
    assert words == expected
    c_steps = [i for i in steps_of(recording, "AccumulateGrad") if i != h_step]
    assert f"None → {text(t['c_grad'])}" in narrate(recording, c_steps[0])


def test_ten_ops_seed_and_constants(ten_ops: tuple[Recording, dict[str, torch.Tensor]]) -> None:
    recording, names = ten_ops
    seed = torch.ones_like(names["k"])
    assert narrate(recording, 0) == (
        f"The seed ∂k/∂k = {text(seed)} enters MulBackward0, the node that made k."
    )
    # g = f * e with the constant f: the constant's slot sends nothing
    g_step = next(
        i for i in steps_of(recording, "MulBackward0") if "(g = " in narrate(recording, i)
    )
    assert "off the graph: nothing sent" in narrate(recording, g_step)


def test_describe_step_is_plain_json(ten_ops: tuple[Recording, dict[str, torch.Tensor]]) -> None:
    recording, _ = ten_ops
    frames = [describe_step(recording, i) for i in range(len(recording) + 1)]
    assert json.loads(json.dumps(frames, ensure_ascii=False)) == frames
    assert frames[0]["type"] == "seed" and frames[0]["node"] is None
    for frame in frames[1:]:
        assert set(frame) >= {"op", "formula", "checked", "narration", "sent", "received"}
        assert all(isinstance(part, str) for part in frame["formula"])
    assert [f["narration"] for f in frames] == [narrate(recording, i) for i in range(len(frames))]


# -- one op at a time, scalars: local derivative and product -------------------------------------
UNARY: list[tuple[str, str, Fn, float]] = [
    ("NegBackward0", "neg", lambda x: -x, 0.7),
    ("PowBackward0", "pow", lambda x: x**3, 0.7),
    ("ExpBackward0", "exp", torch.exp, 0.7),
    ("LogBackward0", "log", torch.log, 0.7),
    ("SinBackward0", "sin", torch.sin, 0.7),
    ("CosBackward0", "cos", torch.cos, 0.7),
    ("TanhBackward0", "tanh", torch.tanh, 0.7),
    ("SigmoidBackward0", "sigmoid", torch.sigmoid, 0.7),
    ("ReluBackward0", "relu", torch.relu, 0.7),
    ("ReluBackward0", "relu", torch.relu, -0.7),
    ("CloneBackward0", "clone", torch.clone, 0.7),
]


@pytest.mark.parametrize(("node", "op", "fn", "value"), UNARY)
def test_unary_scalar_chain_rule(node: str, op: str, fn: Fn, value: float) -> None:
    x = torch.tensor(value, requires_grad=True)
    out = fn(x)
    seed = torch.tensor(3.0)
    recording = gradviz.record(out, gradient=seed, names={"x": x, "out": out})
    words = narrate(recording, only_step(recording, node))
    (sent,) = torch_grads(fn, [x], seed)
    (local,) = torch_grads(fn, [x], torch.ones(()))
    assert f"got ∂out/∂out = {text(seed)}" in words
    assert words.startswith(f"{node} (out = ")
    if op == "clone":
        assert f"→ sends {text(sent)} to AccumulateGrad(x)" in words
    else:
        assert "/∂x = " in words
        assert f"= {text(local)} →" in words
        shown = text(sent) if local == 1 else f"{product(seed, local)} = {text(sent)}"
        assert f"→ sends {shown} to AccumulateGrad(x)" in words
    info = describe_step(recording, only_step(recording, node))
    assert info["op"] == op and info["checked"] is True
    assert torch.equal(text_ready(x.grad), sent)


BINARY: list[tuple[str, str, Fn, str]] = [
    ("AddBackward0", "add", lambda x, y: x + y, "x + y"),
    ("AddBackward0", "add", lambda x, y: torch.add(x, y, alpha=3), "x + 3·y"),
    ("SubBackward0", "sub", lambda x, y: x - y, "x - y"),
    ("MulBackward0", "mul", lambda x, y: x * y, "x·y"),
    ("DivBackward0", "div", lambda x, y: x / y, "x/y"),
    ("PowBackward1", "pow", lambda x, y: x**y, "x^y"),
]


@pytest.mark.parametrize(("node", "op", "fn", "expr"), BINARY)
def test_binary_scalar_chain_rule(node: str, op: str, fn: Fn, expr: str) -> None:
    x = torch.tensor(1.5, requires_grad=True)
    y = torch.tensor(-2.5, requires_grad=True)
    out = fn(x, y)
    seed = torch.tensor(2.0)
    recording = gradviz.record(out, gradient=seed, names={"x": x, "y": y, "out": out})
    index = only_step(recording, node)
    words = narrate(recording, index)
    sent = torch_grads(fn, [x, y], seed)
    local = torch_grads(fn, [x, y], torch.ones(()))
    assert f"{node} (out = {expr}): got ∂out/∂out = {text(seed)}" in words
    for name, s, d in zip("xy", sent, local, strict=True):
        assert f"∂({expr})/∂{name} = " in words
        shown = text(s) if d == 1 else f"{product(seed, d)} = {text(s)}"
        assert f"= {text(d)} → sends {shown} to AccumulateGrad({name})" in words
    assert describe_step(recording, index)["checked"] is True
    assert describe_step(recording, index)["op"] == op


# -- vectors and matrices: what is sent, checked against torch -------------------------------------
def small(*shape: int, offset: float = 0.0) -> torch.Tensor:
    """Short, exact values, so every one is printed: 0.5, 1, 1.5, ..."""
    count = 1
    for n in shape:
        count *= n
    return (torch.arange(count, dtype=torch.float32).reshape(shape) + 1 + offset) / 2


SHAPED: list[tuple[str, str, Fn, list[tuple[int, ...]]]] = [
    ("SumBackward0", "sum", lambda x: x.sum(), [(2, 3)]),
    ("SumBackward1", "sum", lambda x: x.sum(1), [(2, 3)]),
    ("SumBackward1", "sum", lambda x: x.sum(-1, keepdim=True), [(2, 3)]),
    ("MeanBackward0", "mean", lambda x: x.mean(), [(2, 2)]),
    ("MeanBackward1", "mean", lambda x: x.mean(0), [(2, 3)]),
    ("MmBackward0", "mm", lambda a, b: a @ b, [(2, 3), (3, 2)]),
    ("MmBackward0", "mm", torch.matmul, [(2, 3), (3, 2)]),
    ("AddmmBackward0", "addmm", torch.addmm, [(2,), (2, 3), (3, 2)]),
    ("TBackward0", "t", lambda x: x.t(), [(2, 3)]),
    ("ViewBackward0", "view", lambda x: x.view(6), [(2, 3)]),
    ("ViewBackward0", "view", lambda x: x.reshape(3, 2), [(2, 3)]),
    ("ExpandBackward0", "expand", lambda x: x.expand(3, 3), [(1, 3)]),
    ("SelectBackward0", "select", lambda x: x[1], [(2, 3)]),
    ("SelectBackward0", "select", lambda x: x[:, 2], [(2, 3)]),
    ("SliceBackward0", "slice", lambda x: x[:, 1:], [(2, 3)]),
    ("SliceBackward0", "slice", lambda x: x[0:3:2], [(4,)]),
    ("MulBackward0", "mul", lambda x, y: x * y, [(2, 3), (3,)]),  # broadcast
    ("AddBackward0", "add", lambda x, y: x + y, [(2, 3), (1, 3)]),
    ("MvBackward0", "mv", lambda a, v: a @ v, [(2, 3), (3,)]),
    ("DotBackward0", "dot", lambda a, b: a @ b, [(3,), (3,)]),
    ("PermuteBackward0", "permute", lambda x: x.permute(1, 0), [(2, 3)]),
    ("CloneBackward0", "clone", torch.clone, [(3,)]),
]


@pytest.mark.parametrize(("node", "op", "fn", "shapes"), SHAPED)
def test_shaped_ops_send_what_torch_computes(
    node: str, op: str, fn: Fn, shapes: list[tuple[int, ...]]
) -> None:
    names = ["x", "y", "z"]
    values = [small(*shape, offset=k) for k, shape in enumerate(shapes)]
    inputs = leaves(*values)
    out = fn(*inputs)
    seed = small(*out.shape, offset=-2.0)
    named = dict(zip(names, inputs, strict=False)) | {"out": out}
    recording = gradviz.record(out, gradient=seed, names=named)
    index = only_step(recording, node)
    words = narrate(recording, index)
    expected = torch_grads(fn, values, seed)
    for name, grad in zip(names, expected, strict=False):
        assert f"sends {text(grad)} to AccumulateGrad({name})" in words or (
            f"= {text(grad)} to AccumulateGrad({name})" in words
        ), words
    info = describe_step(recording, index)
    assert info["op"] == op and info["checked"] is True, words
    assert f"got ∂out/∂out = {text(seed)}" in words


def test_linear_names_the_weight_through_t() -> None:
    w = small(2, 3).requires_grad_(True)
    b = small(2).requires_grad_(True)
    x = small(4, 3, offset=1)
    out = F.linear(x, w, b)
    seed = small(4, 2, offset=-3)
    recording = gradviz.record(out, gradient=seed, names={"w": w, "b": b, "x": x, "out": out})
    words = narrate(recording, only_step(recording, "AddmmBackward0"))
    grad_w, grad_b = torch_grads(lambda w, b: F.linear(x, w, b), [w, b], seed)
    assert "(out = b + x@wᵀ)" in words
    assert f"sends {text(grad_b)} to AccumulateGrad(b)" in words
    assert "x is off the graph: nothing sent" in words
    t_words = narrate(recording, only_step(recording, "TBackward0"))
    assert f"sends {text(grad_w)} to AccumulateGrad(w)" in t_words


def test_unbind_lesson() -> None:
    built = lesson("unbind").build()
    recording = gradviz.record(*built.roots, names=built.names)
    words = narrate(recording, only_step(recording, "UnbindBackward0"))
    reference = lesson("unbind").build().names
    for part in ("b", "c", "d"):
        reference[part].retain_grad()
    torch.autograd.backward(reference["e"])
    got = ", ".join(f"∂e/∂{p} = {text(reference[p].grad)}" for p in ("b", "c", "d"))
    assert f"got {got};" in words
    assert f"sends {text(reference['a'].grad)} to AccumulateGrad(a)" in words
    first = narrate(recording, 1)
    assert "(e = (b·c)·d)" in first and "UnbindBackward0 output 2" in first


def test_constant_operand_is_named_and_sends_nothing() -> None:
    built = lesson("one-grad").build()
    recording = gradviz.record(*built.roots, names=built.names)
    words = narrate(recording, 1)
    (to_a,) = torch_grads(lambda a: a * built.names["b"], [built.names["a"]], torch.ones(()))
    assert f"∂(a·b)/∂a = b = {text(built.names['b'])} → sends {text(to_a)}" in words
    assert "b is off the graph: nothing sent" in words


# -- the plain sentence, flow notes and wrong formulas ---------------------------------------
def test_other_nodes_get_the_generic_sentence() -> None:
    x = torch.tensor([0.25, 0.5], requires_grad=True)
    out = torch.erf(x)
    seed = torch.tensor([1.0, 2.0])
    recording = gradviz.record(out, gradient=seed, names={"x": x, "out": out})
    words = narrate(recording, 1)
    (sent,) = torch_grads(torch.erf, [x], seed)
    assert words == (
        f"ErfBackward0 received ∂out/∂out = {text(seed)}; sends {text(sent)} to AccumulateGrad(x)."
    )
    assert describe_step(recording, 1)["op"] == ""


def test_formula_that_disagrees_falls_back_to_the_generic_sentence() -> None:
    a = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(3.0, requires_grad=True)
    c = a * b
    recording = gradviz.record(c, names={"a": a, "b": b, "c": c})
    assert describe_step(recording, 1)["op"] == "mul"
    # numbers the op's formula cannot give (a user's node hook is told apart and does not
    # get here: see tests/capture/test_user_hooks.py)
    step = recording.steps[0]
    step.grad_inputs = tuple(g * 2 for g in step.grad_inputs)  # type: ignore[operator]
    words = narrate(recording, 1)
    assert words.startswith("MulBackward0 received")
    assert "∂(" not in words
    assert f"sends {text(a.grad * 2)} to AccumulateGrad(a)" in words  # type: ignore[operator]
    assert describe_step(recording, 1)["checked"] is False


def test_flow_note_is_appended() -> None:
    x = torch.tensor(2.0, requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: g * 10)  # type: ignore[no-untyped-call]
    out = y.exp()
    recording = gradviz.record(out, names={"x": x, "y": y, "out": out})
    step = recording.steps[only_step(recording, "MulBackward0") - 1]
    assert not step.flow_ok
    words = narrate(recording, step.index)
    assert words.endswith(f" Flow check: {step.flow_note}.")
    assert f"= {text(x.grad)} to AccumulateGrad(x)" in words


def test_unfinished_step_says_so() -> None:
    x = torch.tensor(1.0, requires_grad=True)
    y = x.exp()
    y.add_(1)
    with pytest.raises(gradviz.BackwardFailed) as failed:
        gradviz.record(y * 2, names={"x": x})
    recording = failed.value.recording
    assert isinstance(recording, Recording)
    assert "did not finish" in narrate(recording, len(recording.steps))


# -- big tensors, summaries, accumulation, grad() ------------------------------------------------
def big_case(keep: Keep, retain: bool) -> tuple[Recording, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    x = torch.randn(64, 3, requires_grad=True)
    w = torch.randn(3, 2, requires_grad=True)
    out = (x @ w).sum()
    recording = gradviz.record(
        out,
        names={"x": x, "w": w, "out": out},
        keep=keep,
        retain_graph=retain,
    )
    return recording, x, w


@pytest.mark.parametrize(("keep", "retain"), [("all", False), ("all", True), ("summary", False)])
def test_big_tensors_read_as_shape_and_norm(keep: Keep, retain: bool) -> None:
    recording, x, w = big_case(keep, retain)
    index = only_step(recording, "MmBackward0")
    words = narrate(recording, index)
    norm = format_number(float(torch.linalg.vector_norm(text_ready(x.grad))))
    assert f"x gets g@wᵀ → sends a 64×3 gradient, norm {norm} to AccumulateGrad(x)" in words
    assert f"sends {text(w.grad)} to AccumulateGrad(w)" in words
    # with the graph retained, the saved tensors are there to check the formula against
    assert describe_step(recording, index)["checked"] is retain


def test_accumulation_shows_before_plus_received() -> None:
    a = torch.tensor(2.0, requires_grad=True)
    c = a * 3
    gradviz.record(c, names={"a": a, "c": c}, retain_graph=True)
    before = text_ready(a.grad).clone()
    second = gradviz.record(c, names={"a": a, "c": c})
    words = narrate(second, only_step(second, "AccumulateGrad"))
    received = torch_grads(lambda a: a * 3, [a], torch.ones(()))[0]
    assert words.endswith(f"{text(before)} + {text(received)} = {text(a.grad)}.")


def test_grad_mode_and_non_scalar_seed() -> None:
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    out = a.sin()
    seed = torch.tensor([3.0, -1.0])
    (grad,), recording = gradviz.record_grad(out, a, grad_outputs=seed, names={"a": a, "out": out})
    assert narrate(recording, 0) == (
        f"The seed ∂out/∂out = {text(seed)} enters SinBackward0, the node that made out."
    )
    words = narrate(recording, 1)
    assert f"sends g ⊙ cos(a) = {text(grad)} to AccumulateGrad(a)" in words
    assert f"∂sin(a)/∂a = cos(a) = {text(torch.cos(a.detach()))}" in words


def test_every_formula_in_an_mlp_agrees_with_the_recording() -> None:
    """With the graph retained every saved tensor is readable, so every formula is checked."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 4), torch.nn.Sigmoid()
    )
    x = torch.randn(16, 3)
    loss = (net(x).exp() - 1).pow(2).mean()
    recording = gradviz.record(loss, params=net, names={"x": x, "loss": loss}, retain_graph=True)
    ops = set()
    for index in range(1, len(recording) + 1):
        info = describe_step(recording, index)
        assert info["op"], info["narration"]
        assert info["checked"] is True, info["narration"]
        ops.add(info["op"])
    assert {"addmm", "tanh", "sigmoid", "exp", "sub", "pow", "mean", "t"} <= ops
    first = net[0]
    assert isinstance(first, torch.nn.Linear)
    grad = text_ready(first.weight.grad)
    norm = format_number(float(torch.linalg.vector_norm(grad)))
    words = [narrate(recording, i) for i in steps_of(recording, "AccumulateGrad")]
    assert any(w.endswith(f"0.weight.grad: None → a 8×3 gradient, norm {norm}.") for w in words)


def test_each_step_names_the_forward_op_and_line_under_watch() -> None:
    with gradviz.watch() as w:
        a = torch.tensor(2.0, requires_grad=True)
        b = torch.tensor(3.0)
        c = a * b
    recording = w.record(c)
    mul = describe_step(recording, 1)
    assert mul["type"] == "MulBackward0"
    assert mul["forward"].startswith("mul at test_explain.py:")
    assert mul["forward"].endswith("c = a * b")
    assert describe_step(recording, 0)["forward"] is None
    plain = gradviz.record(torch.tensor(2.0, requires_grad=True) * 3)
    assert describe_step(plain, 1)["forward"] is None


# -- second derivatives: the graph of a gradient made with create_graph=True ---------------------
def test_second_derivative_graph_uses_no_borrowed_names() -> None:
    """Notebook 07: differentiating df/dx of f = 5·x²·y again. Its graph is autograd's own
    arithmetic (x**1, ·2, ·5, ·y); no step may call a tensor x′ (a derivative?) or x (x**1)."""
    x = torch.tensor(4.0, requires_grad=True)
    y = torch.tensor(1.0, requires_grad=True)
    f = 5 * x**2 * y
    (made,), _ = gradviz.record_grad(f, x, create_graph=True, names={"x": x, "y": y, "f": f})
    df_dx = text_ready(made)
    (_,), recording = gradviz.record_grad(df_dx, x, names={"x": x, "df_dx": df_dx})
    words = [narrate(recording, i) for i in range(len(recording) + 1)]
    # PyTorch on a fresh graph with the same values
    x2, y2 = leaves(x, y)
    (g1,) = torch.autograd.grad(5 * x2**2 * y2, x2, create_graph=True)
    (d2,) = torch.autograd.grad(g1, x2)
    assert not any("′" in w or "PowBackward0 (x)" in w or "∂(x)/∂x" in w for w in words), words
    # the chain from PyTorch: d2 arrives at x through x**1 (local 1) after ·2 (local 2)
    (twice,) = torch_grads(lambda t: t * 2, [x.detach()], torch.ones(()))
    (power_one,) = torch_grads(lambda t: t**1, [x.detach()], torch.ones(()))
    into_mul = d2 / twice  # what the ·2 node got: d2 = got·2
    assert narrate(recording, only_step(recording, "PowBackward0")).startswith(
        f"PowBackward0 (x¹): got ∂df_dx/∂x¹ = {text(d2 / power_one)}; ∂(x¹)/∂x = "
        f"{text(power_one)} → sends {text(d2)} to AccumulateGrad(x)."
    )
    mul_two = only_step(recording, "MulBackward1")
    assert narrate(recording, mul_two).startswith(
        f"MulBackward1 (x¹·2): got ∂df_dx/∂(x¹·2) = {text(into_mul)}; ∂(x¹·2)/∂x¹ = "
        f"{text(twice)} → sends {product(into_mul, twice)} = {text(d2)} to PowBackward0."
    )
    assert describe_step(recording, mul_two)["checked"] is True
    # df_dx = u·(x¹·2): u (5·y·1 here) has no name, and the sentence says so
    first = words[1]
    assert "MulBackward0 (df_dx = u·(x¹·2), where u is the unnamed output of MulBackward0)" in first
    assert f"∂(u·(x¹·2))/∂(x¹·2) = u = {text(into_mul)} → sends {text(into_mul)} to" in first
    assert f"∂(u·(x¹·2))/∂u = x¹·2 = {text(twice * x.detach())}" in first


def test_gradient_graph_of_a_cube_names_the_numbers_not_y() -> None:
    x = torch.tensor(2.0, requires_grad=True)
    y = x**3
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    recording = gradviz.record(g, names={"x": x, "y": y, "g": g}, retain_graph=True)
    words = [narrate(recording, i) for i in range(len(recording) + 1)]
    assert not any("′" in w for w in words), words
    assert words[1].startswith("MulBackward0 (g = 1·(x²·3)): got ∂g/∂g = 1;")
    (three,) = torch_grads(lambda t: t * 3, [x.detach() ** 2], torch.ones(()))
    (second,) = torch.autograd.grad(g, x, retain_graph=True)
    assert f"∂(x²·3)/∂x² = {text(three)} → sends {text(three)} to PowBackward0" in words[2]
    assert words[-1].endswith(f"None → {text(second)}.")


def test_a_named_constant_equal_to_a_saved_number_is_not_borrowed() -> None:
    """x * 2 saves the Python number 2 (an int64 tensor): not the float constant scale = 2."""
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    scale = torch.tensor(2.0)
    out = (x * 2).sum() * scale
    recording = gradviz.record(out, names={"x": x, "scale": scale, "out": out})
    first, inner = steps_of(recording, "MulBackward0")
    assert narrate(recording, first).startswith("MulBackward0 (out = sum(x·2)·scale): got")
    (to_x,) = torch_grads(lambda v: (v * 2).sum() * scale, [x], torch.ones(()))
    words = narrate(recording, inner)
    assert words.startswith("MulBackward0 (x·2): got"), words
    assert f"→ sends g ⊙ 2 = {text(to_x)} to AccumulateGrad(x); the constant 2 is off" in words


# -- constants the node did not save -------------------------------------------------------------
def tour() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([0.5, -1.0], requires_grad=True)
    bias = torch.tensor(0.25)
    return x, w, bias, (x * w).sum() + bias


def test_the_only_named_constant_names_an_add_operand() -> None:
    x, w, bias, y = tour()
    recording = gradviz.record(y, names={"x": x, "w": w, "bias": bias, "y": y})
    words = narrate(recording, only_step(recording, "AddBackward0"))
    (to_sum,) = torch_grads(lambda s: s + bias, [(x * w).sum()], torch.ones(()))
    assert words.startswith(
        f"AddBackward0 (y = sum(x·w) + bias): got ∂y/∂y = 1; ∂(sum(x·w) + bias)/∂sum(x·w) = 1 "
        f"→ sends {text(to_sum)} to SumBackward0; bias is off the graph: nothing sent."
    )
    assert "′" not in words


def ambiguous() -> dict[str, torch.Tensor]:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    bias, scale = torch.tensor(0.25), torch.tensor(3.0)
    y = ((x * x).sum() + bias) * scale
    return {"x": x, "bias": bias, "scale": scale, "y": y}


def test_an_unidentified_constant_is_const_never_a_tensor_letter() -> None:
    names = ambiguous()
    recording = gradviz.record(names["y"], names=names)
    words = narrate(recording, only_step(recording, "AddBackward0"))
    assert "+ const, where const is an unnamed constant)" in words
    assert "const is off the graph: nothing sent" in words
    assert "bias" not in words and "′" not in words
    # a Python number leaves no trace either
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.sum() + 0.25
    plain = narrate(gradviz.record(y, names={"x": x, "y": y}), 1)
    assert plain.startswith("AddBackward0 (y = sum(x) + const, where const is an unnamed constant)")


def test_watch_links_the_constant_of_an_add() -> None:
    with gradviz.watch() as watched:
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        bias, scale = torch.tensor(0.25), torch.tensor(3.0)
        y = ((x * x).sum() + bias) * scale
        z = x.sum() + 0.5
        t = (x * torch.tensor(3.0)).sum()  # an unnamed constant: its value
    recording = watched.record(y)
    words = narrate(recording, only_step(recording, "AddBackward0"))
    (to_sum,) = torch_grads(lambda s: (s + bias) * scale, [(x * x).sum()], torch.ones(()))
    assert "(sum(x·x) + bias): got" in words
    assert f"= 1 → sends {text(to_sum)} to SumBackward0; bias is off the graph" in words
    number = watched.record(z)
    assert narrate(number, 1).startswith("AddBackward0 (z = sum(x) + 0.5): got")
    unnamed = watched.record(t)
    (to_x,) = torch_grads(lambda v: (v * 3).sum(), [x], torch.ones(()))
    words = narrate(unnamed, only_step(unnamed, "MulBackward0"))
    assert words.startswith("MulBackward0 (x·3): got")
    assert f"sends g ⊙ 3 = {text(to_x)} to AccumulateGrad(x); the constant 3 is off" in words


# -- a hook changed what a node received ---------------------------------------------------------
def test_a_hooked_gradient_is_not_written_as_the_sum_of_the_streams() -> None:
    """Notebook 09: y's hook multiplies its gradient by 10, w's halves it."""
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    y = w * 3
    y.register_hook(lambda grad: grad * 10)  # type: ignore[no-untyped-call]
    w.register_hook(lambda grad: grad / 2)  # type: ignore[no-untyped-call]
    z = (y * y).sum()
    recording = gradviz.record(z, names={"w": w, "y": y, "z": z})
    # PyTorch without hooks: the two streams into y, and what y's node sends to w
    first, second = torch_grads(lambda a, b: (a * b).sum(), [y, y], torch.ones(()))
    total = first + second
    received = total * 10  # the hook's change
    (to_w,) = torch_grads(lambda v: v * 3, [w], received)
    y_step = recording.step_for(str(recording.graph.tensor("y").node_id))  # y's MulBackward0
    assert y_step is not None
    step = y_step.index
    words = narrate(recording, step)
    assert words.startswith(
        f"MulBackward0 (y = w·3): got {text(received)}, not what was sent towards y "
        f"({text(first)} from MulBackward0 + {text(second)} from MulBackward0 = {text(total)}): "
        "a hook changed the gradient on the way; "
    ), words
    assert f"= {text(received)};" not in words and "∂z/∂y" not in words
    assert f"sends g ⊙ 3 = {text(to_w)} to AccumulateGrad(w)" in words
    assert words.endswith(f" Flow check: {recording.steps[step - 1].flow_note}.")
    leaf = narrate(recording, only_step(recording, "AccumulateGrad"))
    assert leaf.startswith(
        f"AccumulateGrad(w): got {text(to_w / 2)}, not what was sent towards w "
        f"({text(to_w)} from MulBackward0): a hook changed the gradient on the way; "
        f"adds it to w.grad: None → {text(w.grad)}."
    ), leaf
