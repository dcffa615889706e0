"""``python -m gradviz.teaching.gallery OUT`` (``make demo``): every lesson rendered into OUT.

For each lesson of ``gradviz.teaching.lessons``: the forward, backward and combined views as SVG
(plus the combined view named by ``gradviz.watch()``), every step of the recorded backward
pass as SVG, the offline stepper page ``replay.html``, and an ``index.html`` gallery that
previews and links them all (relative links only, so it works offline from ``file://``).
Then ``explained/``: why ``.grad`` is None, memory, gradient health, a diff and the
optimizer step (``gradviz.teaching.explained``).
``--assets DIR`` writes the README's example diagrams and the theme definitions instead.
"""

from __future__ import annotations

import argparse
import dataclasses
import html
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gradviz.export.files import write_file
from gradviz.model.recording import GradValue, value_text
from gradviz.objects import Recording, record, trace
from gradviz.render.options import View
from gradviz.render.theme import THEMES
from gradviz.teaching.explained import Explained, explained_section, render_explained
from gradviz.teaching.lessons import LESSONS, Lesson, lesson

__all__ = ["main", "render_assets", "render_lessons", "write_gallery", "write_themes"]

VIEWS: tuple[View, ...] = ("backward", "combined")
# What the gallery previews for each lesson, in this order: file name -> caption.
PREVIEWS = {
    "forward.svg": "forward (gradviz.watch)",
    "backward.svg": "backward",
    "combined.svg": "combined",
    "combined-watched.svg": "combined, names from watch",
}
REPLAY = "replay.html"
SLIDES = ("replay.pdf", "replay.pptx")  # one page / slide per frame, narration as caption / notes

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


@dataclass
class Rendered:
    """What one lesson wrote, and what the gallery says about it."""

    lesson: Lesson
    files: list[Path] = field(default_factory=list)
    steps: int = 0
    mode: str = "backward"
    results: list[str] = field(default_factory=list)


def render_lesson(item: Lesson, folder: Path, progress: Progress = _quiet) -> Rendered:
    """Every picture of one lesson: its views, its steps and its replay page."""
    from gradviz.objects import watch

    done = Rendered(item)
    built = item.build()
    graph = trace(*built.roots, names=built.names)
    done.files += [graph.save(folder / f"{view}.svg", view=view) for view in VIEWS]

    with watch() as w:
        watched = item.build()
    named = w.trace(*watched.roots)
    done.files += [
        named.save(folder / "forward.svg", view="forward"),
        named.save(folder / "combined-watched.svg", view="combined"),
    ]
    # The same watched build, now run backward: each step knows its forward op and line.
    recording = watched.record(w)
    for stale in (folder / "steps").glob("*.svg"):  # from an earlier run with more steps
        stale.unlink()
    done.files += recording.save_steps(folder / "steps")
    title = f"gradviz · {item.slug}: {item.title}"
    done.files.append(recording.save(folder / REPLAY, title=title))
    done.files += [recording.save(folder / name) for name in SLIDES]  # lecture slides
    done.steps, done.mode = len(recording.steps), recording.mode
    done.results = results(recording)
    progress(f"  {item.slug}: {done.steps} steps, {len(done.files)} files")
    return done


def results(recording: Recording) -> list[str]:
    """What the pass produced, as the replay's last frame shows it: '.grad' of every named
    leaf (and of retain_grad() tensors); under autograd.grad, the gradient for each input."""
    graph = recording.graph
    last = recording.frame(len(recording.steps))
    names = {t.id: t.name or t.id for t in graph.tensors}
    untouched = " (autograd.grad leaves .grad alone)" if recording.mode == "grad" else ""
    lines = [f"{names[tid]}.grad = {text}{untouched}" for tid, text in last.leaf_grads.items()]
    lines += [f"{names[tid]}.grad = {text} (retained)" for tid, text in last.retained_grads.items()]
    if recording.mode == "grad":
        for node_id in recording.input_nodes or []:
            sent: list[GradValue] = []
            for edge in graph.in_edges(node_id):
                step = recording.step_for(edge.src)
                value = step.grad_inputs[edge.slot] if step and step.grad_inputs else None
                if value is not None:
                    sent.append(value)
            who = [names[t.id] for t in graph.tensors_at(node_id)] or [node_id]
            total = _total(sent)
            lines.append(f"grad for {', '.join(who)} = {value_text(total)}")
    return lines


def _total(values: list[GradValue]) -> GradValue | None:
    import torch

    tensors = [v for v in values if isinstance(v, torch.Tensor)]
    if not tensors or len(tensors) != len(values):
        return values[0] if len(values) == 1 else None
    total = tensors[0].detach()
    for value in tensors[1:]:
        total = total + value.detach()
    return total


def render_lessons(out: Path, progress: Progress = _quiet) -> list[Path]:
    """Every lesson into ``out/<slug>/``, then ``out/index.html``; the files written."""
    written: list[Path] = []
    rendered = []
    for number, item in enumerate(LESSONS, start=1):
        progress(f"[{number}/{len(LESSONS)}] {item.title}")
        done = render_lesson(item, out / item.slug, progress)
        rendered.append(done)
        written += done.files
    progress("[explained] why .grad is None, memory, health, a diff, the optimizer step")
    explained = render_explained(out, progress)
    written += [path for entry in explained for path in entry.files]
    written.append(write_gallery(out, rendered, explained))
    return written


def _rel(path: Path, out: Path) -> str:
    return html.escape(path.relative_to(out).as_posix())


def _card(out: Path, done: Rendered) -> str:
    item = done.lesson
    folder = out / item.slug
    replay = folder / REPLAY
    figures = []
    for name, caption in PREVIEWS.items():
        path = folder / name
        if path not in done.files:
            continue
        src = _rel(path, out)
        figures.append(
            f'<figure><a href="{src}"><img src="{src}" alt="{html.escape(caption)}: '
            f'{html.escape(item.title)}"></a><figcaption>{html.escape(caption)}</figcaption>'
            "</figure>"
        )
    # Under watch() the replay opens with one frame per forward op (forward-NNN.svg), then
    # the seed (step-000.svg) and one frame per backward step.
    shown = sorted(path for path in done.files if path.parent.name == "steps")
    forward = [path for path in shown if path.name.startswith("forward-")]
    backward = [path for path in shown if path.name.startswith("step-")]
    steps = forward + backward
    thumbs = []
    for path in steps:
        src = _rel(path, out)
        kind, number = path.stem.split("-")
        label = f"forward {int(number)}" if kind == "forward" else f"step {int(number)}"
        label = "seed" if label == "step 0" else label
        thumbs.append(
            f'<a class="step" href="{src}" title="{label}"><img src="{src}" '
            f'alt="{html.escape(item.slug)} {label}"><span>{label}</span></a>'
        )
    mode = "torch.autograd.grad" if done.mode == "grad" else "backward"
    results = "".join(f"<li><code>{html.escape(line)}</code></li>" for line in done.results)
    return (
        f'<section class="lesson" id="{html.escape(item.slug)}">'
        f"<h2>{html.escape(item.number)} · {html.escape(item.title)}</h2>"
        f"<p>{html.escape(item.about)}</p>"
        f'<p class="replay"><a href="{_rel(replay, out)}">▶ Step through the replay</a> '
        f"({_frames(len(forward), done.steps, mode)}, one offline page; also "
        + (f'<a href="{_rel(steps[0], out)}">as {len(steps)} SVGs</a>' if steps else "no SVGs")
        + ")</p>"
        + _classroom(replay, out)
        + f'<div class="views">{"".join(figures)}</div>'
        f'<div class="steps">{"".join(thumbs)}</div>'
        + (f'<ul class="results">{results}</ul>' if results else "")
        + "</section>"
    )


def _classroom(replay: Path, out: Path) -> str:
    """The lecture's ways in: presentation mode, the quiz, and the slides beside the page."""
    pdf, pptx = (_rel(replay.with_name(name), out) for name in SLIDES)
    return (
        '<p class="classroom">In class: press <kbd>F</kbd> (or Present) for full screen '
        "with the narration as a caption, a clicker steps, <kbd>B</kbd> blanks; tick "
        "<em>quiz</em> to predict each step before it is revealed. Slides: "
        f'<a href="{pdf}">PDF</a> (one page per frame) · <a href="{pptx}">PowerPoint</a> '
        "(narration in the speaker notes).</p>"
    )


def _frames(forward: int, backward: int, mode: str) -> str:
    text = f"{backward} steps of the {mode} pass"
    return f"{forward} forward ops, then {text}" if forward else text


def write_gallery(
    out: Path, rendered: list[Rendered], explained: list[Explained] | None = None
) -> Path:
    """``out/index.html``: previews and links for every lesson (and the ``explained``
    entries), relative paths only."""
    toc = "".join(
        f'<li><a href="#{html.escape(d.lesson.slug)}">{html.escape(d.lesson.number)} · '
        f"{html.escape(d.lesson.title)}</a></li>"
        for d in rendered
    )
    if explained:
        toc += '<li><a href="#explained">Questions, answered on the graph</a></li>'
    page = (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        "<title>gradviz lessons</title>\n<style>"
        "body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1400px;"
        "padding:0 1rem;background:#fafafa;color:#222}"
        ".lesson{background:#fff;border:1px solid #ddd;border-radius:8px;padding:1rem;"
        "margin:1.5rem 0}"
        ".lesson h2{margin-top:0}"
        ".views{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:1rem}"
        "figure{margin:0;border:1px solid #eee;border-radius:6px;padding:.5rem}"
        "figure img{width:100%;height:300px;object-fit:contain}"
        "figcaption{font-size:.85rem;color:#555;text-align:center}"
        ".steps{display:flex;gap:.5rem;overflow-x:auto;padding:.75rem 0}"
        ".step{flex:0 0 auto;text-align:center;font-size:.8rem;color:#555;"
        "text-decoration:none}"
        ".step img{display:block;width:140px;height:140px;object-fit:contain;"
        "border:1px solid #eee;border-radius:4px;background:#fff}"
        ".replay a{font-weight:600}"
        ".results{font-size:.9rem}"
        ".explained{font-size:.8rem;white-space:pre-wrap;background:#f6f6f6;padding:.5rem}"
        "figure.wide{grid-column:1/-1}figure.wide img{height:auto}"
        "</style></head>\n<body><h1>gradviz lessons</h1>\n"
        "<p>Rendered by <code>make demo</code>, one section per lesson of the lecture "
        "notebooks (<code>notebooks/NN-*.ipynb</code>). Each lesson: the forward, backward "
        "and combined views, every step of the recorded backward pass, and an offline "
        "replay page to step through in front of the class.</p>\n"
        f'<ol class="toc">{toc}</ol>\n'
        + "\n".join(_card(out, done) for done in rendered)
        + ("\n" + explained_section(out, explained) if explained else "")
        + "\n</body></html>\n"
    )
    path = out / "index.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_file(path, page)
    return path


def write_themes(folder: Path) -> Path:
    """``themes.json``: every theme of ``gradviz.render.theme`` as data, for front ends."""
    data = {name: dataclasses.asdict(theme) for name, theme in THEMES.items()}
    path = folder / "themes.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_file(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return path


def render_assets(folder: Path) -> list[Path]:
    """The README's diagrams (the ten-op lesson, backward, combined and one step) and
    ``themes.json``."""
    built = lesson("ten-ops").build()
    graph = trace(*built.roots, names=built.names)
    fresh = lesson("ten-ops").build()
    recording = record(*fresh.roots, names=fresh.names)
    step = folder / "ten-ops-step-3.svg"
    write_file(step, recording.svg(step=3))
    return [
        graph.save(folder / "ten-ops-backward.svg", view="backward"),
        graph.save(folder / "ten-ops-combined.svg", view="combined"),
        step,
        write_themes(folder),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gradviz.teaching.gallery", description=__doc__)
    parser.add_argument("out", nargs="?", default="out", type=Path)
    parser.add_argument("--assets", type=Path, help="write the README's diagrams here")
    args = parser.parse_args(argv)
    if args.assets is not None:
        written = render_assets(args.assets)
        where = args.assets
    else:
        written = render_lessons(args.out, progress=print)
        where = args.out
    print(f"==> {len(written)} files in {where}/")
    if args.assets is None:
        print(f"==> open {where / 'index.html'} in a browser for the gallery")
    return 0


if __name__ == "__main__":
    sys.exit(main())
