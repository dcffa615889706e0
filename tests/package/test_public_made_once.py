"""The public objects are built as such by the layer that makes them (the public layer
registers its classes in ``gradviz.model.public``), so nothing is given its public class
afterwards and each public entry point's signature and docstring is written once."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import torch

import gradviz
from gradviz.analysis.breakpoints import find_steps
from gradviz.analysis.diff import diff_recordings
from gradviz.analysis.health import gradient_health
from gradviz.analysis.memory import saved_memory
from gradviz.capture.order import predicted_order
from gradviz.render.export import graph_dot, graph_svg
from gradviz.replay.forwardframes import forward_frame
from gradviz.replay.frames import make_frame, make_frames

PACKAGE = Path(gradviz.__file__).parent
capture_trace = importlib.import_module("gradviz.capture.trace")
capture_record = importlib.import_module("gradviz.capture.record")
capture_optstep = importlib.import_module("gradviz.capture.optstep")
capture_watch = importlib.import_module("gradviz.capture.watch")


def _assignments_to(attribute: str) -> list[str]:
    """Every ``x.<attribute> = ...`` (or ``setattr(x, "<attribute>", ...)``) in gradviz."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            elif isinstance(node, ast.Call) and ast.unparse(node.func) == "setattr":
                name = node.args[1] if len(node.args) > 1 else None
                if isinstance(name, ast.Constant) and name.value == attribute:
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr == attribute:
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def test_no_object_has_its_class_swapped() -> None:
    assert not _assignments_to("__class__")


def test_no_docstring_is_copied() -> None:
    assert not _assignments_to("__doc__")


def _loss() -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(3, requires_grad=True)
    return x, (x * 2).exp().sum()


def test_capture_builds_the_public_graph_and_recording() -> None:
    _, loss = _loss()
    assert type(capture_trace.trace(loss)) is gradviz.Graph
    recording = capture_record.record(loss)
    assert type(recording) is gradviz.Recording
    assert type(recording.graph) is gradviz.Graph


def test_analyses_build_the_public_reports() -> None:
    _, loss = _loss()
    a = gradviz.record(loss, retain_graph=True)
    b = gradviz.record(loss)
    assert type(gradient_health(a)) is gradviz.GradientHealth
    assert type(diff_recordings(a, b)) is gradviz.RecordingDiff
    assert type(a.diff(b)) is gradviz.RecordingDiff
    assert type(a.health()) is gradviz.GradientHealth


def test_entry_points_are_the_capture_functions_themselves() -> None:
    """One signature and one docstring: the public name is the capture function, or a
    wrapper that runs the analyses on its result and says so (``__wrapped__``)."""
    pairs = [
        (gradviz.trace, capture_trace.trace),
        (gradviz.record, capture_record.record),
        (gradviz.record_grad, capture_record.record_grad),
        (gradviz.record_step, capture_optstep.record_step),
        (gradviz.watch, capture_watch.watch),
        (gradviz.Watch.trace, capture_watch.Watch.trace),  # inherited: the public classes
        (gradviz.Watch.record, capture_watch.Watch.record),
        (gradviz.Recording.find, find_steps),
        (gradviz.Recording.frame, make_frame),
        (gradviz.Recording.frames, make_frames),
        (gradviz.Recording.forward_frame, forward_frame),
        (gradviz.Recording.memory, saved_memory),
        (gradviz.Recording.predicted_order, predicted_order),
        (gradviz.Graph.to_dot, graph_dot),
        (gradviz.Graph.svg, graph_svg),
    ]
    for public, made in pairs:
        assert inspect.unwrap(public) is made, public
        assert public.__doc__ and public.__doc__ == made.__doc__


def test_a_failed_backward_carries_a_public_analysed_recording() -> None:
    x = torch.randn(3, requires_grad=True)
    y = x.sigmoid()  # saves its output
    y.mul_(2)  # which is changed in place
    try:
        gradviz.record(y.sum())
    except gradviz.BackwardFailed as failed:
        assert type(failed.recording) is gradviz.Recording
        assert "in-place" in str(failed) or "inplace" in str(failed)
    else:
        raise AssertionError("the backward should have failed")


def test_watch_hands_out_public_objects() -> None:
    x = torch.randn(3, requires_grad=True)
    with capture_watch.watch() as w:
        loss = (x * 3).sum()
    assert type(w) is gradviz.Watch
    assert type(w.trace(loss)) is gradviz.Graph
    assert type(w.record(loss)) is gradviz.Recording


def test_record_step_and_training_runs_are_public() -> None:
    w = torch.nn.Parameter(torch.randn(3))
    optimizer = torch.optim.SGD([w], lr=0.1)
    done = gradviz.record_step(optimizer, (w * w).sum())
    assert type(done) is gradviz.OptimizerStep
    assert type(done.recording) is gradviz.Recording
    with gradviz.watch_training(optimizer=optimizer, keep_steps=[0]) as run:
        (w * w).sum().backward()
        optimizer.step()
    assert type(run) is gradviz.TrainingRun
    assert type(run.recording(0)) is gradviz.Recording
