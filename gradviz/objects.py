"""The public ``Graph`` and ``Recording``: plain data below, drawing and replay composed here.

``gradviz.model`` holds the data classes and knows nothing of how they are drawn; this
module, on top of every layer, subclasses them with the convenience methods users call
(``graph.svg()``, ``recording.frame(i)``, ``recording.save("r.html")``). ``trace``,
``record``, ``record_grad`` and ``watch`` return these public classes: each is registered
(``gradviz.model.public``) so that capture builds it directly, and the entry points are the
capture functions themselves, with the analyses run on what they made. See
docs/architecture.md ("Composing the public objects").
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

import torch
from typing_extensions import Unpack

from gradviz.analysis import inplace as _inplace
from gradviz.analysis.breakpoints import find_steps
from gradviz.analysis.diff import diff_recordings
from gradviz.analysis.health import gradient_health
from gradviz.analysis.memory import saved_memory
from gradviz.analysis.recorded import analyse_failure, analyse_recording
from gradviz.capture import optstep as _optstep
from gradviz.capture import record as _record
from gradviz.capture import trace as _trace
from gradviz.capture import training as _training_capture
from gradviz.capture import watch as _watch
from gradviz.capture.leaves import (
    LeafFacts,
    LeafValue,
    check_function,
    leaf_facts,
    leaf_tensors,
    run_loss,
)
from gradviz.capture.nograd import check_tensor, gradient_facts
from gradviz.capture.order import predict_order, predicted_order
from gradviz.capture.record import Keep
from gradviz.errors import BackwardFailed, GradvizError, InvalidArgument
from gradviz.explain import nograd as _nograd
from gradviz.explain.optstep import describe_step
from gradviz.export import files
from gradviz.export.keywords import FilmStripKeywords, SaveKeywords, check_save_keywords
from gradviz.model import graph as _graph
from gradviz.model import optstep as _optstep_data
from gradviz.model import recording as _recording
from gradviz.model import training as _training
from gradviz.model.public import as_public, register_public
from gradviz.render.export import graph_dot, graph_svg
from gradviz.render.options import RenderKeywords
from gradviz.render.picture import Picture
from gradviz.replay.frames import (
    forward_frame,
    make_frame,
    make_frames,
)
from gradviz.reports import GradientHealth, InplaceReport, NoGradReport, RecordingDiff
from gradviz.stepper.display import notebook_bundle
from gradviz.stepper.filmstrip import filmstrip_html
from gradviz.stepper.optpage import step_html

if TYPE_CHECKING:
    from gradviz.stepper.explore import Explorer

__all__ = [
    "Graph",
    "Recording",
    "SaveKeywords",
    "TrainingRun",
    "TrainingWatch",
    "Watch",
    "explore",
    "record",
    "record_grad",
    "record_step",
    "trace",
    "watch",
    "watch_training",
    "why_no_grad",
]


@register_public
class Graph(_graph.Graph):
    """A traced backward graph (``gradviz.model.graph.Graph``) that draws itself."""

    def execution_order(self, only: Iterable[str] | None = None) -> list[str]:
        """Node ids in the order autograd's engine will run them (predicted, not run)."""
        return predict_order(self, None if only is None else set(only))

    # functions of the layers below as methods: each signature and docstring is theirs
    to_dot = graph_dot
    svg = graph_svg

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


@register_public
class Recording(_recording.Recording):
    """A recorded backward pass (``gradviz.model.recording.Recording``) that replays itself.

    Steps are numbered once for everything (``frame``, ``svg``, the stepper): ``0`` is the
    seed, ``1``..``N`` the backward steps (``N == len(recording)``), and under
    ``gradviz.watch()`` ``-F``..``-1`` the forward ops before the seed.
    """

    graph: Graph

    # functions of the layers below as methods: each signature and docstring is theirs
    predicted_order = predicted_order

    def diff(self, other: _recording.Recording) -> RecordingDiff:
        """Compare with another recording on one layout: nodes only in one of them, and
        per matched node the ratio of gradient norms and whether it differs (``.svg()``,
        ``.save("diff.html")``, ``.first_difference``)."""
        if not isinstance(other, _recording.Recording):
            raise GradvizError(
                f"diff() compares two recordings, not a {type(other).__name__}: rec_a.diff(rec_b)"
            )
        return as_public(diff_recordings(self, other), RecordingDiff)

    memory = saved_memory
    frame = make_frame
    frames = make_frames
    forward_frame = forward_frame

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
        return as_public(gradient_health(self, vanishing_below, exploding_above), GradientHealth)

    find = find_steps

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


# -- the capture functions, with the analyses run on what they made --------------------
_Params = ParamSpec("_Params")
_Made = TypeVar("_Made")
_Public = TypeVar("_Public")
_Grads = TypeVar("_Grads")


def _recording_in(made: object) -> _recording.Recording:
    """The recording a capture function made: itself, the last of a tuple, or a step's."""
    if isinstance(made, tuple):
        made = made[-1]
    if isinstance(made, _optstep_data.OptimizerStep):
        made = made.recording
    return as_public(made, _recording.Recording)


def _analysed(capture: Callable[_Params, _Made]) -> Callable[_Params, _Made]:
    """``capture`` (its own signature and docstring) with ``analysis.recorded`` run on the
    recording it made once the backward has finished, or on a failed backward's partial
    recording (``BackwardFailed.recording``) before the error goes on."""

    @functools.wraps(capture)
    def analysed(*args: _Params.args, **kwargs: _Params.kwargs) -> _Made:
        try:
            made = capture(*args, **kwargs)
        except BackwardFailed as failed:
            analyse_failure(failed)
            raise
        analyse_recording(_recording_in(made))
        return made

    return analysed


def _handing_out(
    capture: Callable[_Params, object], _: type[_Public]
) -> Callable[_Params, _Public]:
    """``capture`` typed as returning the public class it builds (``model.public``)."""
    return cast("Callable[_Params, _Public]", capture)


def _grads_and_public(
    capture: Callable[_Params, tuple[_Grads, _recording.Recording]],
) -> Callable[_Params, tuple[_Grads, Recording]]:
    """``record_grad`` typed as returning the public ``Recording`` it builds."""
    return cast("Callable[_Params, tuple[_Grads, Recording]]", capture)


trace = _handing_out(_trace.trace, Graph)
record = _handing_out(_analysed(_record.record), Recording)
record_grad = _grads_and_public(_analysed(_record.record_grad))


@register_public
class Watch(_watch.Watch[Graph, Recording]):
    """The context manager ``gradviz.watch()`` returns (``gradviz.capture.watch``); its
    ``trace`` and ``record`` return the public ``Graph`` and ``Recording``, and ``record``
    runs the analyses on what it made."""

    record = _analysed(_watch.Watch[Graph, Recording].record)

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
        return as_public(
            _nograd.explain_no_grad(graph, facts, root_label, graph.forward), NoGradReport
        )


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
    return as_public(_nograd.explain_no_grad(graph, facts, "root"), NoGradReport)


@register_public
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


record_step = _handing_out(_analysed(_optstep.record_step), OptimizerStep)
watch = _handing_out(_watch.watch, Watch)


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
        source = as_public(seen_by, Watch).trace(*roots)
    return as_public(_inplace.explain_inplace(source), InplaceReport)


@register_public
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
        return as_public(self.recordings[step], Recording)

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

    def widget(
        self,
        vanishing_below: float = _training.VANISHING_BELOW,
        exploding_above: float = _training.EXPLODING_ABOVE,
        replays: bool = True,
    ) -> Any:
        """The film strip as a notebook widget (``gradviz.stepper.filmwidget.FilmStrip``;
        needs the notebook extra): the kept steps' replays open below it."""
        from gradviz.stepper.filmwidget import FilmStrip

        return FilmStrip(self, vanishing_below, exploding_above, replays)

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> dict[str, Any] | tuple[dict[str, Any], dict[str, Any]]:
        """Jupyter display: the film strip widget, or a line of text without one."""
        text = f"TrainingRun: {self.summary_text()}"
        try:
            bundle = self.widget()._repr_mimebundle_()
        except ImportError:  # no notebook extra
            return {"text/plain": f"{text}\n(install torch-gradviz[notebook] for the film strip)"}
        return bundle if bundle is not None else {"text/plain": text}

    def save(self, path: str | Path, **options: Unpack[FilmStripKeywords]) -> Path:
        """.html (the film strip page, ``html()``'s keywords; each recorded step's replay
        is written beside it first, ``<stem>-step<k>.html``, and linked) or .json
        (``to_dict()``), written atomically."""
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
        return as_public(super().__enter__(), TrainingRun)

    def enter_at_step(self) -> TrainingRun:
        return as_public(super().enter_at_step(), TrainingRun)


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


def explore(fn: Callable[..., torch.Tensor], /, **leaves: LeafValue) -> Explorer:
    """The stepper over ``fn``'s backward pass, with a field for each leaf: an edit runs
    ``fn`` again with real PyTorch, records it, and shows the new numbers at the same step.

    ``fn`` takes the leaves as keyword arguments and returns the loss, a tensor of one
    element computed from them with autograd on. Each leaf is a number (``a=2.0``: a 0-dim
    tensor of the default dtype), a list of numbers, or a floating tensor (copied; yours is
    never changed), and ``fn`` gets it as a fresh tensor that requires grad. A leaf of up to
    8 elements gets a field per element and a float64 central difference per element beside
    its gradient; a bigger one is shown, not editable. Editing needs a running kernel: a
    saved page (``explorer.recording.save("x.html")``) says so.
    """
    from gradviz.stepper.explore import Explorer

    check_function(fn, list(leaves))
    given = leaf_tensors(leaves)

    def run(values: Mapping[str, Sequence[float]]) -> tuple[Recording, list[LeafFacts]]:
        tensors = {}
        for name, first in given.items():
            if name in values:
                made = torch.tensor(list(values[name]), dtype=first.dtype).reshape(first.shape)
            else:
                made = first.detach().clone()
            tensors[name] = made.requires_grad_(True)
        loss = run_loss(fn, tensors)
        recording = record(loss, names=tensors)
        return recording, leaf_facts(fn, tensors)

    recording, facts = run({})
    return Explorer(run, recording, facts)
