"""The public ``Graph`` and ``Recording``: plain data below, drawing and replay composed here.

``gradviz.model`` holds the data classes and knows nothing of how they are drawn; this
module, on top of every layer, subclasses them with the convenience methods users call
(``graph.svg()``, ``recording.frame(i)``, ``recording.save("r.html")``). ``trace``,
``record``, ``record_grad`` and ``watch`` return these public classes. See
docs/architecture.md ("Composing the public objects").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

import torch
from typing_extensions import Unpack

from gradviz.analysis import inplace as _inplace
from gradviz.analysis.breakpoints import find_steps
from gradviz.analysis.diff import diff_recordings
from gradviz.analysis.health import gradient_health
from gradviz.analysis.memory import MemoryTimeline, saved_memory
from gradviz.analysis.recorded import analyse_failure, analyse_recording
from gradviz.capture import optstep as _optstep
from gradviz.capture import record as _record
from gradviz.capture import trace as _trace
from gradviz.capture import training as _training_capture
from gradviz.capture import watch as _watch
from gradviz.capture.nograd import check_tensor, gradient_facts
from gradviz.capture.order import predict_order, predicted_order
from gradviz.capture.record import (
    MEMORY_BUDGET,
    InputTensors,
    Keep,
    RecordKeywords,
    TensorOrTensors,
)
from gradviz.capture.trace import Params
from gradviz.errors import BackwardFailed, GradvizError, InvalidArgument
from gradviz.explain import nograd as _nograd
from gradviz.explain.optstep import describe_step
from gradviz.export import files
from gradviz.export.keywords import FilmStripKeywords, SaveKeywords, check_save_keywords
from gradviz.model import graph as _graph
from gradviz.model import optstep as _optstep_data
from gradviz.model import recording as _recording
from gradviz.model import training as _training
from gradviz.render.export import graph_dot, graph_svg
from gradviz.render.options import RenderKeywords
from gradviz.render.picture import Picture
from gradviz.replay.frames import (
    ForwardFrame,
    Frame,
    forward_frame,
    make_frame,
    make_frames,
)
from gradviz.reports import (
    GradientHealth,
    InplaceReport,
    NoGradReport,
    RecordingDiff,
    public_report,
)
from gradviz.stepper.display import notebook_bundle
from gradviz.stepper.filmstrip import filmstrip_html
from gradviz.stepper.optpage import step_html

__all__ = [
    "Graph",
    "Recording",
    "SaveKeywords",
    "TrainingRun",
    "TrainingWatch",
    "Watch",
    "record",
    "record_grad",
    "record_step",
    "trace",
    "watch",
    "watch_training",
    "why_no_grad",
]


class Graph(_graph.Graph):
    """A traced backward graph (``gradviz.model.graph.Graph``) that draws itself."""

    def execution_order(self, only: Iterable[str] | None = None) -> list[str]:
        """Node ids in the order autograd's engine will run them (predicted, not run)."""
        return predict_order(self, None if only is None else set(only))

    def to_dot(self, **options: Unpack[RenderKeywords]) -> str:
        """The graph as Graphviz DOT text."""
        return graph_dot(self, **options)

    def svg(self, **options: Unpack[RenderKeywords]) -> Picture:
        """The graph laid out by Graphviz ``dot``, as SVG text (a notebook shows it in a box
        that scrolls sideways where it is wider than the output)."""
        return Picture(graph_svg(self, **options))

    def save(
        self, path: str | Path, *, dpi: float | None = None, **options: Unpack[RenderKeywords]
    ) -> Path:
        """Write .svg, .png, .pdf, .dot or .json, chosen by the file's suffix, atomically;
        ``dpi=`` sets a PNG's resolution."""
        return files.save(self, path, options if dpi is None else {**options, "dpi": dpi})

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """Jupyter display: the SVG, and a text summary where SVG cannot be shown."""
        bundle = {"text/plain": self.summary_text()}
        try:
            picture = self.svg()
            bundle["image/svg+xml"] = str(picture)
            bundle["text/html"] = picture._repr_html_()  # never wider than the output
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

    def diff(self, other: _recording.Recording) -> RecordingDiff:
        """Compare with another recording on one layout: nodes only in one of them, and
        per matched node the ratio of gradient norms and whether it differs (``.svg()``,
        ``.save("diff.html")``, ``.first_difference``)."""
        if not isinstance(other, _recording.Recording):
            raise GradvizError(
                f"diff() compares two recordings, not a {type(other).__name__}: rec_a.diff(rec_b)"
            )
        return public_report(diff_recordings(self, other))

    def memory(self) -> MemoryTimeline:
        """The bytes each node's saved tensors hold, freed as backward passes them, with
        the running total (saved + gradients in flight + .grad) and its peak per step;
        ``explain_second_backward()`` says why a second backward fails."""
        return saved_memory(self)

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

    def svg(
        self, step: int | None = None, health: bool = False, **options: Unpack[RenderKeywords]
    ) -> Picture:
        """The replay's one layout, styled for ``step`` (default: the last; under ``watch()``,
        -F..-1 are the forward frames). ``health=True`` draws each edge's width by
        log10‖g‖ and its colour by band (vanishing, exploding): see ``health()``. A
        notebook shows it in a box that scrolls sideways where it is wider than the output."""
        return Picture(files.recording_svg(self, step, health, options))

    def health(self, vanishing_below: float = 1e-6, exploding_above: float = 1e3) -> GradientHealth:
        """log10‖g‖ of every edge's gradient with its band, and per-module parameter
        gradient norms (named parameters: ``params=model`` or ``watch(model)``)."""
        return public_report(gradient_health(self, vanishing_below, exploding_above))

    def find(
        self,
        *,
        nonfinite: bool = False,
        norm_above: float | None = None,
        norm_below: float | None = None,
        module: str | None = None,
        type: str | None = None,
        start: int = 1,
    ) -> list[_recording.Step]:
        """Breakpoints: the steps from ``start`` on (inclusive; 1..N), in the engine's
        order, that meet every condition given. ``nonfinite=True``: a gradient it received
        or sent is NaN or Inf; ``norm_above=`` / ``norm_below=``: one's L2 norm is above /
        below the number; ``module="encoder.layer.3"``: its node was made in that module or
        a submodule (under ``gradviz.watch(model)``); ``type="MulBackward0"``: its node's
        type. ``rec.find(nonfinite=True)[0]`` is the first NaN or Inf;
        ``rec.find(module=m, start=s + 1)`` the next step in ``m`` after step ``s``."""
        return find_steps(
            self,
            nonfinite=nonfinite,
            norm_above=norm_above,
            norm_below=norm_below,
            module=module,
            type=type,
            start=start,
        )

    def save_steps(self, folder: str | Path, **options: Unpack[RenderKeywords]) -> list[Path]:
        """One SVG per frame (``step-000.svg`` ...; under ``watch()`` first ``forward-001.svg``
        ..., one per forward op), all from one Graphviz layout."""
        return files.save_steps(self, folder, options)

    def save(self, path: str | Path, **options: Unpack[SaveKeywords]) -> Path:
        """.svg (the last step), .html (the offline stepper; also ``title=``), .json (the
        steps as data), .pdf (one page per frame, the narration as a caption), .pptx (one
        slide per frame, the narration in the speaker notes), or .mp4 / .gif (a video of
        the frames with their narration as captions: ``size=(1280, 720)``,
        ``seconds_per_step=1.0``, ``fps=10`` for .mp4; needs ``torch-gradviz[video]``);
        the other keywords are render options."""
        return files.save(self, path, options)

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


@contextmanager
def _failures_made_public() -> Iterator[None]:
    """A failed backward's recording, like a successful one's, has the public class."""
    try:
        yield
    except BackwardFailed as error:
        _public_failure(error)
        raise


def _public_failure(error: BackwardFailed) -> None:
    """A failed backward's partial recording is analysed and public too
    (``error.recording.svg()``)."""
    analyse_failure(error)
    if isinstance(error.recording, _recording.Recording):
        _public(error.recording)


def _recorded(made: _recording.Recording) -> Recording:
    """A finished capture, analysed (the layer above capture runs the analyses), public."""
    analyse_recording(made)
    result: Recording = _public(made)
    return result


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
    with _failures_made_public():
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
    return _recorded(made)


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
    with _failures_made_public():
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
    return grads, _recorded(made)


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
        **options: Unpack[RecordKeywords],
    ) -> Recording:
        with _failures_made_public():
            made = super().record(*roots, names=names, params=params, **options)
        return _recorded(made)

    def why_no_grad(self, tensor: torch.Tensor, root: torch.Tensor) -> NoGradReport:
        """Why ``tensor.grad`` is None after ``root.backward()``, with the line that caused
        it (a ``detach()``/``.data``, ``no_grad``, an integer cast, a copy) marked on the
        combined forward/backward view. Call it after the ``with`` block."""
        tensor = check_tensor(tensor, "tensor")
        root = check_tensor(root, "root")
        forward_id, root_forward_id = self.find(tensor), self.find(root)
        label = _nograd.forward_label(self.forward, forward_id, "the tensor")
        names = {label: tensor} if tensor.requires_grad and forward_id is None else None
        graph = self.trace(root, names=names)
        facts = gradient_facts(graph, tensor, root, label, forward_id, root_forward_id)
        root_label = _nograd.forward_label(self.forward, root_forward_id, "the root")
        return public_report(_nograd.explain_no_grad(graph, facts, root_label, graph.forward))


def why_no_grad(tensor: torch.Tensor, root: torch.Tensor, name: str | None = None) -> NoGradReport:
    """Why ``tensor.grad`` is None after ``root.backward()``, from the backward graph alone.

    ``name`` labels the tensor in the words and the drawing. For the line that cut the
    graph (``detach``, ``no_grad``, an integer cast), run the forward pass inside
    ``gradviz.watch()`` and ask ``w.why_no_grad(tensor, root)``.
    """
    tensor = check_tensor(tensor, "tensor")
    root = check_tensor(root, "root")
    label = name or "tensor"
    graph = trace(root, names={label: tensor} if tensor.requires_grad else None)
    facts = gradient_facts(graph, tensor, root, label)
    return public_report(_nograd.explain_no_grad(graph, facts, "root"))


class OptimizerStep(_optstep_data.OptimizerStep):
    """A recorded backward and the ``optimizer.step()`` after it; ``str()`` explains it."""

    recording: Recording

    def text(self) -> str:
        """The update rule, each parameter before and after, the optimizer state it used,
        the update-to-weight ratio, and what ``.grad`` holds for the next step."""
        return describe_step(self)

    def __str__(self) -> str:
        return self.text()

    def html(self, **options: Unpack[SaveKeywords]) -> str:
        """The offline page: the backward replay, then at its last step the
        ``optimizer.step()`` panel (button or key ``s``): each parameter's ‖w‖ before and
        after, ‖Δw‖, update/weight, the gradient and optimizer state it used, the
        hyper-parameters and the update rule, the parameters' leaf boxes marked."""
        check_save_keywords(Path("step.html"), options)
        return step_html(self, **options)

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Jupyter shows the stepper over the backward, the step's panel at its end."""
        return notebook_bundle(self)

    def save(self, path: str | Path, **options: Unpack[SaveKeywords]) -> Path:
        """.html (the page of ``html()``, same keywords) or .json (the step as data)."""
        return files.save(self, path, options)


def record_step(
    optimizer: torch.optim.Optimizer,
    loss: torch.Tensor,
    names: Mapping[str, torch.Tensor] | None = None,
    params: torch.nn.Module | None = None,
    closure: Callable[[], Any] | None = None,
    **options: Unpack[RecordKeywords],
) -> OptimizerStep:
    with _failures_made_public():
        made = _optstep.record_step(
            optimizer, loss, names=names, params=params, closure=closure, **options
        )
    _recorded(made.recording)
    made.__class__ = OptimizerStep
    result: OptimizerStep = made  # type: ignore[assignment]
    return result


record_step.__doc__ = _optstep.record_step.__doc__

Watch.trace.__doc__ = _watch.Watch.trace.__doc__
Watch.record.__doc__ = _watch.Watch.record.__doc__


def watch(model: torch.nn.Module | None = None, names: Mapping[str, Any] | None = None) -> Watch:
    return Watch(model=model, names=names)


watch.__doc__ = _watch.watch.__doc__


def explain_inplace(source: Any) -> InplaceReport:
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
    return public_report(_inplace.explain_inplace(source))


class TrainingRun(_training.TrainingRun):
    """A training run kept by ``watch_training`` (``gradviz.model.training.TrainingRun``)
    that saves itself: ``save("training.html")`` writes the film strip page."""

    def recording(self, step: int) -> Recording:
        """The full recording of training step ``step`` (one of ``keep_steps``)."""
        if step not in self.recordings:
            raise InvalidArgument(
                f"training step {step} was not recorded in full; recorded: "
                f"{sorted(self.recordings) or 'none'} (watch_training(..., keep_steps=[{step}]))"
            )
        result: Recording = _public(self.recordings[step])
        return result

    def html(
        self,
        title: str = "gradviz training",
        vanishing_below: float = _training.VANISHING_BELOW,
        exploding_above: float = _training.EXPLODING_ABOVE,
    ) -> str:
        """The offline film strip: per-module gradient norms over training (log scale),
        the loss, a slider over the training steps, and marks at the first non-finite
        value and at each module's vanishing / exploding onset (by the two thresholds)."""
        return filmstrip_html(self, title, vanishing_below, exploding_above)

    def save(self, path: str | Path, **options: Unpack[FilmStripKeywords]) -> Path:
        """.html (the film strip page, ``html()``'s keywords) or .json (``to_dict()``),
        written atomically."""
        if options and Path(path).suffix.lower() != ".html":
            raise InvalidArgument(
                f"save({Path(path).name!r}) does not take {', '.join(sorted(options))}: "
                "they are for the .html film strip"
            )
        return files.save(self, path, options)


class TrainingWatch(_training_capture.TrainingWatch):
    """The context manager ``watch_training`` returns; ``with ... as run`` gives the
    public ``TrainingRun``."""

    def __enter__(self) -> TrainingRun:
        run = super().__enter__()
        run.__class__ = TrainingRun
        return cast(TrainingRun, run)

    def enter_at_step(self) -> TrainingRun:
        return cast(TrainingRun, super().enter_at_step())  # __enter__ made it public


def watch_training(
    model: torch.nn.Module | None = None,
    optimizer: torch.optim.Optimizer | None = None,
    *,
    every: int = 1,
    keep_steps: Iterable[int] = (),
    updates: bool = True,
    edges: bool = False,
    keep: Keep = "summary",
) -> TrainingWatch:
    """Keep, for an unmodified training loop inside the block, every ``every``-th step's
    per-parameter gradient norms (module norms follow from them), the loss (the tensor
    ``backward()`` ran on, or ``run.log(loss)``), each group's learning rate and, with
    ``updates``, each parameter's ‖Δw‖ across ``optimizer.step()``; with ``edges``, the
    norm of the gradient each backward edge sent (``run.edge_norms[step]``, by a
    recording's edge keys: a walk of the graph and a hook per node each kept step, which
    costs more); the steps in ``keep_steps`` are recorded in full (``run.recording(step)``,
    with ``keep=``).

    A training step is one ``optimizer.step()`` (without an optimizer: one ``backward()``).
    Gradients and parameters are only read: training is bitwise the same with and without
    the block, whose hooks are removed on leaving it, also on an exception. Memory:
    ``run.bytes_per_step()`` per kept step (8 bytes per parameter tensor for each norm),
    plus the full recordings; ``updates`` copies the parameters once per kept step while
    ``step()`` runs.
    """
    return TrainingWatch(
        model,
        optimizer,
        every=every,
        keep_steps=tuple(keep_steps),
        updates=updates,
        edges=edges,
        keep=keep,
    )
