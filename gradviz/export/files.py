"""Every file gradviz writes goes through here: one table from an object's kind and a
suffix to the writer that makes the file's content, and one door that writes it whole or
not at all (``gradviz.atomic``).

``save(obj, path, options)`` finds the writers of the object's class (or of the nearest
class above it in the table), refuses a suffix it has none for with ``UnsupportedFormat``
(listing those it has), and returns the path written. A file that links others (the film
strip links each kept step's replay page) has its companions written first, each whole, so
the file never links one that is not there. ``write_file`` is the door for
content made elsewhere (the command line's fitted drawing, its text account).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from gradviz.analysis.diff import RecordingDiff
from gradviz.analysis.health import gradient_health
from gradviz.analysis.inplace import InplaceReport
from gradviz.analysis.nograd import NoGradReport
from gradviz.atomic import atomic_write
from gradviz.errors import UnsupportedFormat
from gradviz.escape import json_text
from gradviz.export.keywords import PAGE_OR_SVG, check_save_keywords
from gradviz.model.graph import Graph
from gradviz.model.optstep import OptimizerStep
from gradviz.model.recording import Recording
from gradviz.model.training import TrainingRun
from gradviz.render.export import GRAPH_SUFFIXES, graph_dot, graph_file
from gradviz.render.reports import (
    diff_options,
    diff_svg,
    health_edge_styles,
    inplace_options,
    nograd_options,
)
from gradviz.replay.frames import step_files, step_svg
from gradviz.stepper.diffpage import diff_html
from gradviz.stepper.filmstrip import filmstrip_html
from gradviz.stepper.optpage import step_html
from gradviz.stepper.page import replay_html

__all__ = [
    "FORMATS",
    "WRITERS",
    "recording_svg",
    "save",
    "save_steps",
    "suffixes",
    "write_file",
]

# every suffix gradviz writes, and what such a file holds
FORMATS: dict[str, str] = {
    ".svg": "a drawing (SVG)",
    ".png": "a drawing (PNG)",
    ".pdf": "a drawing, or one page per frame of a replay (PDF)",
    ".dot": "the Graphviz DOT text of a drawing",
    ".json": "the plain data",
    ".html": "an offline page",
    ".pptx": "one slide per frame of a replay (PowerPoint)",
    ".mp4": "a video of a replay's frames (H.264)",
    ".gif": "a replay's frames as an animated GIF",
    ".txt": "a text account",
}

Content = bytes | str
Writer = Callable[[Any, Path, dict[str, Any]], Content]


def recording_svg(
    recording: Recording, step: int | None, health: bool, options: Mapping[str, Any]
) -> str:
    """The replay's one layout styled for ``step`` (default: the last); ``health=True``
    draws each edge by its gradient's size and band."""
    chosen = dict(options)
    if health:
        chosen["edge_styles"] = health_edge_styles(
            gradient_health(recording), chosen.get("theme", "default")
        )
    return step_svg(recording, len(recording.steps) if step is None else step, **chosen)


def _graph_writer(suffix: str) -> Writer:
    return lambda graph, _path, options: graph_file(graph, suffix, options)


Marks = Callable[[Any, Mapping[str, Any]], dict[str, Any]]


def _marked_writer(suffix: str, marked: Marks) -> Writer:
    return lambda report, _path, options: graph_file(report.graph, suffix, marked(report, options))


def _recording_svg(recording: Recording, _path: Path, options: dict[str, Any]) -> str:
    render = {key: value for key, value in options.items() if key not in PAGE_OR_SVG}
    return recording_svg(recording, options.get("step"), options.get("health", False), render)


def _slides(suffix: str) -> Writer:
    def write(recording: Recording, path: Path, options: dict[str, Any]) -> bytes:
        from gradviz.replay import slides  # svglib, reportlab, python-pptx: when asked

        if suffix == ".pdf":
            return slides.slides_pdf(recording, path.stem, **options)
        return slides.slides_pptx(recording, **options)

    return write


def _video(suffix: str) -> Writer:
    def write(recording: Recording, _path: Path, options: dict[str, Any]) -> bytes:
        from gradviz.replay.video import video_bytes  # PyAV and Pillow: when asked

        return video_bytes(recording, suffix, **options)

    return write


def _data(obj: Any, _path: Path, _options: dict[str, Any]) -> str:
    return json_text(obj.to_dict(), indent=1)


# a report marks its graph: drawn, never saved as the graph's plain data
_DRAWINGS = tuple(suffix for suffix in GRAPH_SUFFIXES if suffix != ".json")

# the one table: what each kind of object saves as, and the writer of each
WRITERS: dict[type, dict[str, Writer]] = {
    Graph: {suffix: _graph_writer(suffix) for suffix in GRAPH_SUFFIXES},
    Recording: {
        ".svg": _recording_svg,
        ".html": lambda recording, _path, options: replay_html(recording, **options),
        ".json": _data,
        ".pdf": _slides(".pdf"),
        ".pptx": _slides(".pptx"),
        ".mp4": _video(".mp4"),
        ".gif": _video(".gif"),
    },
    OptimizerStep: {
        ".html": lambda step, _path, options: step_html(step, **options),
        ".json": _data,
    },
    RecordingDiff: {
        ".html": lambda diff, _path, options: diff_html(diff, **options),
        ".svg": lambda diff, _path, options: diff_svg(diff, **options),
        ".dot": lambda diff, _path, options: graph_dot(diff.union, **diff_options(diff, options)),
        ".json": _data,
    },
    InplaceReport: {suffix: _marked_writer(suffix, inplace_options) for suffix in _DRAWINGS},
    NoGradReport: {suffix: _marked_writer(suffix, nograd_options) for suffix in _DRAWINGS},
    TrainingRun: {
        ".html": lambda run, _path, options: filmstrip_html(run, **options),
        ".json": _data,
    },
}

Companions = Callable[[Any, Path], tuple[list[tuple[Path, Content]], dict[str, Any]]]


def _replay_pages(
    run: TrainingRun, target: Path
) -> tuple[list[tuple[Path, Content]], dict[str, Any]]:
    """Each recorded training step's replay page, ``<stem>-step<k>.html`` beside the strip,
    and the strip's ``replays`` option linking them."""
    pages = {
        step: target.with_name(f"{target.stem}-step{step}.html") for step in sorted(run.recordings)
    }
    back = f'<p><a class="gv-back" href="{html.escape(quote(target.name))}">the film strip</a></p>'
    files: list[tuple[Path, Content]] = [
        (
            path,
            replay_html(
                run.recordings[step], title=f"{target.stem} · training step {step}", after=back
            ),
        )
        for step, path in pages.items()
    ]
    return files, {"replays": {step: quote(path.name) for step, path in pages.items()}}


# the files a file links, written before it: (kind, suffix) -> them and the options naming them
_COMPANIONS: dict[tuple[type, str], Companions] = {(TrainingRun, ".html"): _replay_pages}

# what each kind checks of its keywords before it draws (a page's or an SVG's keywords)
_CHECKED: tuple[type, ...] = (Recording, OptimizerStep)
# what the error adds for a suffix the kind does not take
_HINTS: dict[type, str] = {
    OptimizerStep: " (step.recording.save() draws the backward pass alone as .svg, .pdf, .pptx)",
}


def _kind(obj: object) -> type:
    for cls in type(obj).__mro__:
        if cls in WRITERS:
            return cls
    raise UnsupportedFormat(f"gradviz cannot save {type(obj).__name__} objects")


def suffixes(obj: object) -> tuple[str, ...]:
    """The suffixes ``obj`` saves as."""
    return tuple(WRITERS[_kind(obj)])


def save(obj: object, path: str | Path, options: Mapping[str, Any]) -> Path:
    """Write ``obj`` as the file ``path`` names, by its suffix, whole or not at all."""
    target = Path(path)
    kind = _kind(obj)
    suffix = target.suffix.lower()
    writer = WRITERS[kind].get(suffix)
    if writer is None:
        *others, last = WRITERS[kind]
        raise UnsupportedFormat(
            f"cannot save {target.name!r}: use {', '.join(others)} or {last} "
            f"(what a {kind.__name__} saves as)" + _HINTS.get(kind, "")
        )
    if kind in _CHECKED:
        check_save_keywords(target, options)
    chosen = dict(options)
    companions = _COMPANIONS.get((kind, suffix))
    if companions is not None:
        linked, named = companions(obj, target)
        for path, content in linked:
            write_file(path, content)
        chosen.update(named)
    return write_file(target, writer(obj, target, chosen))


def save_steps(recording: Recording, folder: str | Path, options: Mapping[str, Any]) -> list[Path]:
    """One SVG per frame into ``folder`` (``gradviz.replay.frames.step_files``)."""
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    return [write_file(target / name, svg) for name, svg in step_files(recording, **options)]


def write_file(path: Path, content: Content) -> Path:
    """The door every file goes through: a suffix of ``FORMATS``, written atomically."""
    if path.suffix.lower() not in FORMATS:
        raise UnsupportedFormat(
            f"cannot write {path.name!r}: gradviz writes {', '.join(FORMATS)} files"
        )
    return atomic_write(path, content)
