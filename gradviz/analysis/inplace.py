"""The in-place explainer: which in-place op broke (or did not break) backward, and why.

Every backward node checks, before it runs, that the tensors it saved in the forward pass
still have the ``_version`` they had then. An in-place op (``c += 1``, ``add_``, slice
assignment) bumps the version; a node that saved that tensor then fails with "modified by
an inplace operation", while a node that saved nothing of it (``AddBackward0``: the
gradient of a sum passes straight through) is unaffected. ``explain_inplace`` reads the
forward data ``gradviz.watch()`` attached to a graph and says which case each in-place
change is, with the names, versions, ops and lines, and marks them in the drawing.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

import torch

from gradviz.model.forward import FOp, Forward
from gradviz.model.graph import Graph
from gradviz.model.public import built

__all__ = [
    "InplaceFinding",
    "InplaceReport",
    "backward_roots",
    "explain_in_message",
    "explain_inplace",
]

_MODIFIED = "modified by an inplace operation"
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_VERSIONS = re.compile(r"is at version (\d+); expected version (\d+)")
_POSITIONS = {"self": "0", "input": "0", "other": "1", "mat2": "1", "weight": "1"}


@dataclass(frozen=True)
class InplaceFinding:
    """One backward node that used a tensor which was changed in place afterwards."""

    fails: bool  # True: this node's backward raises; False: harmless
    node_id: str
    node_type: str
    tensor_id: str  # forward tensor id
    tensor_name: str
    saved_as: str | None  # the saved attribute ("self", "other", ...) when it fails
    version_saved: int
    version_now: int
    used_by: FOp  # the forward op that created the node
    bumped_by: tuple[FOp, ...]  # the in-place ops that changed the tensor afterwards
    message: str


@dataclass
class InplaceReport:
    """Every in-place change after use found in a watched graph, failing ones first."""

    graph: Graph
    findings: list[InplaceFinding] = field(default_factory=list)

    @property
    def failing(self) -> list[InplaceFinding]:
        return [f for f in self.findings if f.fails]

    @property
    def harmless(self) -> list[InplaceFinding]:
        return [f for f in self.findings if not f.fails]

    @property
    def message(self) -> str:
        if not self.findings:
            return "No tensor used by the backward graph was changed in place afterwards."
        return "\n\n".join(f.message for f in self.findings)

    def marks(self) -> tuple[str, ...]:
        """Element ids to outline: the failing node(s), the tensor, the in-place op(s)."""
        chosen = self.failing or self.findings
        ids: list[str] = []
        forward = self.graph.forward
        for finding in chosen:
            ids.append(finding.node_id)
            ids.append(finding.tensor_id)
            ids.extend(f"op{op.index}" for op in finding.bumped_by)
            if forward is not None:
                ids.extend(r for r, f in forward.tensor_links.items() if f == finding.tensor_id)
        return tuple(dict.fromkeys(ids))

    def __str__(self) -> str:
        return self.message


def explain_inplace(source: Any) -> InplaceReport:
    """Explain in-place changes in a graph traced or recorded under ``gradviz.watch()``.

    ``source``: a ``Graph``, a ``Recording``, the ``BackwardFailed`` that ``w.record()``
    raised, or PyTorch's own ``RuntimeError`` from a plain ``backward()`` of tensors made
    under ``watch()``. Without ``watch()`` data there is nothing to go on, and
    ``ValueError`` says so.
    """
    graph = _graph_of(source)
    forward = graph.forward
    if forward is None:
        raise ValueError(
            "explain_inplace needs forward data: run the forward pass inside "
            "`with gradviz.watch() as w:` and pass w.trace(root), w.record(root) or the "
            "BackwardFailed it raised"
        )
    failing_node = getattr(source, "node_id", None)
    nodes_of_op: dict[int, list[str]] = {}
    for node_id, op_index in forward.node_ops.items():
        if not graph.node(node_id).is_accumulate_grad:
            nodes_of_op.setdefault(op_index, []).append(node_id)
    findings: list[InplaceFinding] = []
    for op in forward.ops:
        for node_id in nodes_of_op.get(op.index, []):
            findings.extend(_check_node(graph, forward, op, node_id, failing_node))
    findings.sort(key=lambda f: (not f.fails, f.used_by.index))
    return built(InplaceReport)(graph, findings)


def explain_in_message(failed: Exception) -> None:
    """Add what ``explain_inplace`` finds to the message of a ``BackwardFailed`` that an
    in-place change caused: the node, the tensor's name, its saved and current versions,
    and the in-place line. The error keeps its type; nothing is added when nothing fails."""
    if _MODIFIED not in str(failed) or not failed.args:
        return
    try:
        failing = explain_inplace(failed).failing
    except (TypeError, ValueError):
        return
    if failing:
        story = "\n\n".join(finding.message for finding in failing)
        failed.args = (f"{failed.args[0]}\n\n{story}", *failed.args[1:])


def _graph_of(source: Any) -> Graph:
    if isinstance(source, Graph):
        return source
    recording = getattr(source, "recording", None)
    if recording is not None and isinstance(getattr(recording, "graph", None), Graph):
        return recording.graph  # type: ignore[no-any-return]
    if isinstance(getattr(source, "graph", None), Graph):
        return source.graph  # type: ignore[no-any-return]
    raise TypeError(
        "explain_inplace takes a Graph, a Recording, a BackwardFailed or PyTorch's "
        f"RuntimeError, not {type(source).__name__}"
    )


def backward_roots(error: BaseException) -> list[torch.Tensor]:
    """The tensors a failed ``Tensor.backward()`` / ``torch.autograd.backward()`` /
    ``torch.autograd.grad()`` call started from, from its frames' arguments."""
    traceback = error.__traceback__
    while traceback is not None:
        frame = traceback.tb_frame
        name = frame.f_code.co_name
        if frame.f_code.co_filename.startswith(_TORCH_DIR) and name in ("backward", "grad"):
            for argument in ("self", "tensors", "outputs"):
                value = frame.f_locals.get(argument)
                found = [value] if isinstance(value, torch.Tensor) else value
                if isinstance(found, list | tuple) and found:
                    tensors = [t for t in found if isinstance(t, torch.Tensor)]
                    if tensors:
                        return tensors
        traceback = traceback.tb_next
    return []


def _unreadable(graph: Graph, node_id: str) -> dict[str, tuple[int, int] | None]:
    """Saved attributes whose version check fails: name -> (now, expected) when known."""
    node = graph.node(node_id)
    found: dict[str, tuple[int, int] | None] = {}
    for saved in node.saved:
        if _MODIFIED in saved.text:
            found[saved.name] = None
    live = node.torch_node
    for name in list(found):
        if live is None:
            continue
        try:
            getattr(live, f"_saved_{name}")
        except RuntimeError as error:
            match = _VERSIONS.search(str(error))
            if match:
                found[name] = (int(match.group(1)), int(match.group(2)))
    return found


def _check_node(
    graph: Graph, forward: Forward, op: FOp, node_id: str, failing_node: str | None
) -> list[InplaceFinding]:
    node = graph.node(node_id)
    broken = _unreadable(graph, node_id)
    used: list[tuple[str, str, int]] = []  # (position, tensor id, version when used)
    for arg in op.inputs:
        if arg.tensor is not None and arg.version is not None:
            used.append((arg.position, arg.tensor, arg.version))
    if "result" in broken:  # only a node that saved its output cares about it
        for tensor_id, version in zip(op.outputs, op.output_versions, strict=True):
            if version is not None:
                used.append(("result", tensor_id, version))
    findings = []
    for position, tensor_id, version in used:
        family = _family(forward, tensor_id)  # views share one version counter
        later = [
            o
            for o in forward.ops
            if o.index > op.index
            and any(b.tensor in family and b.before >= version for b in o.bumps)
        ]
        if not later:
            continue
        tensor = forward.tensor(tensor_id)
        now = max(b.after for o in later for b in o.bumps if b.tensor in family)
        saved_as = next(
            (n for n in broken if _POSITIONS.get(n, n) == position or n == position), None
        )
        if saved_as is None and len(broken) == 1 and position != "result":
            only = next(iter(broken))
            if only not in _POSITIONS and only != "result":
                saved_as = only
        if saved_as is not None and broken[saved_as] is not None:
            now, version = broken[saved_as]  # type: ignore[misc]
        findings.append(
            _finding(graph, forward, op, node_id, node.type_name, tensor_id, tensor.name,
                     saved_as, version, now, tuple(later), node_id == failing_node)
        )  # fmt: skip
    return findings


def _family(forward: Forward, tensor_id: str) -> set[str]:
    """The tensor, its base and every view of that base: they share one version counter."""

    def root(key: str) -> str:
        seen = set()
        while True:
            base = forward.tensor(key).base
            if base is None or base in seen:
                return key
            seen.add(key)
            key = base

    top = root(tensor_id)
    return {t.id for t in forward.tensors if root(t.id) == top}


def _where(op: FOp) -> str:
    if op.line is None:
        return f"`{op.name}`"
    return f"`{op.line.text}` ({op.line.short()})"


def _finding(
    graph: Graph,
    forward: Forward,
    op: FOp,
    node_id: str,
    node_type: str,
    tensor_id: str,
    name: str | None,
    saved_as: str | None,
    saved: int,
    now: int,
    bumped_by: tuple[FOp, ...],
    failed_here: bool,
) -> InplaceFinding:
    label = name or forward.label(tensor_id)
    short = label
    base = forward.tensor(tensor_id).base
    if not name and base is not None:
        short = forward.label(base)
        label = f"a view of {short} ({forward.label(tensor_id)})"
    changes = " and ".join(f"{_where(o)} [{o.name}]" for o in bumped_by)
    if saved_as is not None:
        message = (
            f"{node_type} ({node_id}), made by {_where(op)}, saved {label} (as "
            f"`{saved_as}`) at version {saved} to compute its gradient. Afterwards {changes} "
            f"changed {label} in place, so it is now at version {now}. Backward refuses to "
            f"use the changed value: {node_type} raises 'modified by an inplace operation'"
            + (" — this is the node that failed." if failed_here else ".")
            + f" Fix: run the in-place op after backward, write it out of place "
            f"({short} = {short} + ...), or use .clone() on {short} in {_where(op)}."
        )
    else:
        kept = [s.name for s in graph.node(node_id).saved]
        what = "nothing" if not kept else ", ".join(kept)
        message = (
            f"{label} was changed in place by {changes} (version {saved} → {now}) after "
            f"{_where(op)} used it, but {node_type} ({node_id}) did not save {label}: its "
            f"gradient does not depend on {label}'s value (it saved {what}). Backward is "
            "unaffected."
        )
    return InplaceFinding(
        fails=saved_as is not None,
        node_id=node_id,
        node_type=node_type,
        tensor_id=tensor_id,
        tensor_name=label,
        saved_as=saved_as,
        version_saved=saved,
        version_now=now,
        used_by=op,
        bumped_by=bumped_by,
        message=message,
    )
