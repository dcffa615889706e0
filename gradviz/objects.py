"""The public ``Graph`` and ``Recording``: plain data below, drawing and replay composed here.

``gradviz.model`` holds the data classes and knows nothing of how they are drawn; this
module, on top of every layer, subclasses them with the convenience methods users call
(``graph.svg()``, ``recording.frame(i)``, ``recording.save("r.html")``). ``trace``,
``record``, ``record_grad`` and ``watch`` return these public classes. See
docs/architecture.md ("Composing the public objects").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import torch
from typing_extensions import Unpack

from gradviz.analysis import inplace as _inplace
from gradviz.analysis.order import predict_order, predicted_order
from gradviz.capture import record as _record
from gradviz.capture import trace as _trace
from gradviz.capture import watch as _watch
from gradviz.capture.record import MEMORY_BUDGET, InputTensors, Keep, TensorOrTensors
from gradviz.capture.trace import Params
from gradviz.errors import BackwardFailed, GradvizError
from gradviz.escape import json_text
from gradviz.model import graph as _graph
from gradviz.model import recording as _recording
from gradviz.render.export import graph_dot, graph_svg, write_graph
from gradviz.render.options import RenderKeywords
from gradviz.replay.frames import (
    ForwardFrame,
    Frame,
    forward_frame,
    make_frame,
    make_frames,
    save_steps,
    step_svg,
)
from gradviz.stepper.display import notebook_bundle
from gradviz.stepper.page import replay_html

__all__ = ["Graph", "Recording", "Watch", "record", "record_grad", "trace", "watch"]


class Graph(_graph.Graph):
    """A traced backward graph (``gradviz.model.graph.Graph``) that draws itself."""

    def execution_order(self, only: Iterable[str] | None = None) -> list[str]:
        """Node ids in the order autograd's engine will run them (predicted, not run)."""
        return predict_order(self, None if only is None else set(only))

    def to_dot(self, **options: Unpack[RenderKeywords]) -> str:
        """The graph as Graphviz DOT text."""
        return graph_dot(self, **options)

    def svg(self, **options: Unpack[RenderKeywords]) -> str:
        """The graph laid out by Graphviz ``dot``, as SVG text."""
        return graph_svg(self, **options)

    def save(self, path: str | Path, **options: Unpack[RenderKeywords]) -> Path:
        """Write .svg, .png, .pdf, .dot or .json, chosen by the file's suffix."""
        return write_graph(self, Path(path), **options)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """Jupyter display: the SVG, and a text summary where SVG cannot be shown."""
        bundle = {"text/plain": self.summary_text()}
        try:
            bundle["image/svg+xml"] = self.svg()
        except GradvizError as error:  # Graphviz missing: show the text and say why
            bundle["text/plain"] += f"\n(no diagram: {error})"
        return bundle


class Recording(_recording.Recording):
    """A recorded backward pass (``gradviz.model.recording.Recording``) that replays itself.

    Steps are numbered once for everything (``frame``, ``svg``, the stepper): ``0`` is the
    seed, ``1``..``N`` the backward steps (``N == len(recording)``), and under
    ``gradviz.watch()`` ``-F``..``-1`` the forward ops before the seed.
    """

    graph: Graph

    def predicted_order(self) -> list[str]:
        """The order predicted from the graph alone, before any backward ran."""
        return predicted_order(self)

    def frame(self, step: int) -> Frame:
        """The state after backward step ``step`` (0: the seed gradient entering the roots,
        ``len(recording)``: the last step); forward steps (-F..-1): ``forward_frame``."""
        return make_frame(self, step)

    def frames(self) -> list[Frame]:
        """Every backward frame, 0 (the seed) to N."""
        return make_frames(self)

    def forward_frame(self, step: int) -> ForwardFrame:
        """Under ``watch()``: the replay at forward step ``step`` (-F..-1): ``-F`` once the
        first forward op has run, ``-1`` once the last has."""
        return forward_frame(self, step)

    def svg(self, step: int | None = None, **options: Unpack[RenderKeywords]) -> str:
        """The replay's one layout, styled for ``step`` (default: the last; under ``watch()``,
        -F..-1 are the forward frames)."""
        return step_svg(self, len(self.steps) if step is None else step, **options)

    def save_steps(self, folder: str | Path, **options: Unpack[RenderKeywords]) -> list[Path]:
        """One SVG per frame (``step-000.svg`` ...; under ``watch()`` first ``forward-001.svg``
        ..., one per forward op), all from one Graphviz layout."""
        return save_steps(self, Path(folder), **options)

    def save(self, path: str | Path, **options: Any) -> Path:
        """.svg (the last step), .html (the offline stepper; also ``title=``), .json (the
        steps as data), .pdf (one page per frame, the narration as a caption) or .pptx (one
        slide per frame, the narration in the speaker notes); the other keywords are render
        options."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        suffix = target.suffix.lower()
        if suffix == ".json":
            target.write_text(json_text(self.to_dict(), indent=1), encoding="utf-8")
        elif suffix == ".svg":
            target.write_text(self.svg(**options), encoding="utf-8")
        elif suffix == ".html":
            target.write_text(replay_html(self, **options), encoding="utf-8")
        elif suffix in (".pdf", ".pptx"):
            from gradviz.replay import slides

            write = slides.save_pdf if suffix == ".pdf" else slides.save_pptx
            write(self, target, **options)
        else:
            raise ValueError(f"cannot save {target.name!r}: use .svg, .html, .json, .pdf or .pptx")
        return target

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Jupyter shows the stepper, with a static final step where widgets cannot run."""
        return notebook_bundle(self)


# -- the capture functions, returning the public classes ----------------------------------
_Data = TypeVar("_Data", _graph.Graph, _recording.Recording)


def _public(data: _Data) -> Any:
    """Give a captured graph or recording its public class, in place (same object, same
    data: the public classes add methods only, no state)."""
    if isinstance(data, _recording.Recording):
        data.__class__ = Recording
        _public(data.graph)
    else:
        data.__class__ = Graph
    return data


def _public_failure(error: BackwardFailed) -> None:
    """A failed backward's partial recording is public too (``error.recording.svg()``)."""
    if isinstance(error.recording, _recording.Recording):
        _public(error.recording)


def trace(
    *roots: torch.Tensor,
    params: Params | None = None,
    names: Mapping[str, torch.Tensor] | None = None,
) -> Graph:
    result: Graph = _public(_trace.trace(*roots, params=params, names=names))
    return result


trace.__doc__ = _trace.trace.__doc__


def record(
    *roots: torch.Tensor,
    gradient: TensorOrTensors | None = None,
    inputs: InputTensors | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    keep: Keep = "auto",
    names: Mapping[str, torch.Tensor] | None = None,
    params: Params | None = None,
    memory_budget: int | None = MEMORY_BUDGET,
) -> Recording:
    try:
        made = _record.record(
            *roots,
            gradient=gradient,
            inputs=inputs,
            retain_graph=retain_graph,
            create_graph=create_graph,
            keep=keep,
            names=names,
            params=params,
            memory_budget=memory_budget,
        )
    except BackwardFailed as error:
        _public_failure(error)
        raise
    result: Recording = _public(made)
    return result


record.__doc__ = _record.record.__doc__


def record_grad(
    outputs: TensorOrTensors,
    inputs: InputTensors,
    grad_outputs: TensorOrTensors | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool = False,
    keep: Keep = "auto",
    names: Mapping[str, torch.Tensor] | None = None,
    params: Params | None = None,
    memory_budget: int | None = MEMORY_BUDGET,
) -> tuple[tuple[torch.Tensor | None, ...], Recording]:
    try:
        grads, made = _record.record_grad(
            outputs,
            inputs,
            grad_outputs=grad_outputs,
            retain_graph=retain_graph,
            create_graph=create_graph,
            allow_unused=allow_unused,
            keep=keep,
            names=names,
            params=params,
            memory_budget=memory_budget,
        )
    except BackwardFailed as error:
        _public_failure(error)
        raise
    result: Recording = _public(made)
    return grads, result


record_grad.__doc__ = _record.record_grad.__doc__


class Watch(_watch.Watch):
    """The context manager ``gradviz.watch()`` returns (``gradviz.capture.watch``); its
    ``trace`` and ``record`` return the public ``Graph`` and ``Recording``."""

    def __enter__(self) -> Watch:
        super().__enter__()
        return self

    def trace(
        self,
        *roots: torch.Tensor,
        params: Params | None = None,
        names: Mapping[str, torch.Tensor] | None = None,
    ) -> Graph:
        result: Graph = _public(super().trace(*roots, params=params, names=names))
        return result

    def record(
        self,
        *roots: torch.Tensor,
        names: Mapping[str, torch.Tensor] | None = None,
        params: Params | None = None,
        **options: Any,
    ) -> Recording:
        try:
            made = super().record(*roots, names=names, params=params, **options)
        except BackwardFailed as error:
            _public_failure(error)
            raise
        result: Recording = _public(made)
        return result


Watch.trace.__doc__ = _watch.Watch.trace.__doc__
Watch.record.__doc__ = _watch.Watch.record.__doc__


def watch(model: torch.nn.Module | None = None, names: Mapping[str, Any] | None = None) -> Watch:
    return Watch(model=model, names=names)


watch.__doc__ = _watch.watch.__doc__


def explain_inplace(source: Any) -> _inplace.InplaceReport:
    """``analysis.inplace.explain_inplace``; PyTorch's own ``RuntimeError`` from a plain
    ``backward()`` works too: the failed call's frames give its roots, and the
    ``watch()`` that saw them gives the forward data."""
    if isinstance(source, RuntimeError) and getattr(source, "recording", None) is None:
        roots = _inplace.backward_roots(source)
        seen_by = next((w for w in map(_watch.watch_that_saw, roots) if w is not None), None)
        if seen_by is None:
            raise ValueError(
                "explain_inplace found no gradviz.watch() that saw the tensors of this "
                "backward: run the forward pass inside `with gradviz.watch() as w:` and call "
                "backward after the block (or pass w.record(root)'s BackwardFailed)"
            )
        source = seen_by.trace(*roots)
    return _inplace.explain_inplace(source)
