"""``python -m gradviz.demo OUT``: render every built-in lesson into OUT (``make demo``).

For each lesson: the backward and combined views as SVG, every step of the recorded
backward pass as SVG, and an ``index.html`` gallery that links and previews them all
(relative links only, so it works offline from ``file://``). ``--assets DIR`` writes the
example diagrams the README shows instead.
"""

from __future__ import annotations

import argparse
import html
import sys
from collections.abc import Callable
from pathlib import Path

from gradviz.lessons import LESSONS, Lesson, lesson
from gradviz.record import record
from gradviz.trace import trace

__all__ = ["main", "render_assets", "render_lessons"]

VIEWS = ("backward", "combined")

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


def render_lesson(item: Lesson, folder: Path, progress: Progress = _quiet) -> list[Path]:
    """Every picture of one lesson: its views, its steps, and what extra views exist."""
    built = item.build()
    graph = trace(*built.roots, names=built.names)
    written = [graph.save(folder / f"{view}.svg", view=view) for view in VIEWS]
    written += _watched_views(item, folder)
    fresh = item.build()
    recording = record(*fresh.roots, names=fresh.names)
    written += recording.save_steps(folder / "steps")
    progress(f"  {item.slug}: {len(written)} files")
    return written


def _watched_views(item: Lesson, folder: Path) -> list[Path]:
    """The forward view and the combined view with the names gradviz.watch() found."""
    from gradviz.watch import watch

    with watch() as w:
        built = item.build()
    graph = w.trace(*built.roots)
    return [
        graph.save(folder / "forward.svg", view="forward"),
        graph.save(folder / "combined-watched.svg", view="combined"),
    ]


def render_lessons(out: Path, progress: Progress = _quiet) -> list[Path]:
    written: list[Path] = []
    for item in LESSONS:
        written += render_lesson(item, out / item.slug, progress)
    written.append(write_gallery(out))
    return written


def write_gallery(out: Path) -> Path:
    """``out/index.html``: a preview and links for every lesson, relative paths only."""
    cards = []
    for item in LESSONS:
        folder = out / item.slug
        links = []
        for path in sorted(folder.glob("*.svg")) + sorted(folder.glob("*.html")):
            rel = path.relative_to(out).as_posix()
            links.append(f'<a href="{html.escape(rel)}">{html.escape(path.name)}</a>')
        steps = sorted((folder / "steps").glob("step-*.svg"))
        if steps:
            first = steps[0].relative_to(out).as_posix()
            links.append(f'<a href="{html.escape(first)}">{len(steps)} step SVGs</a>')
        preview = f"{item.slug}/combined.svg"
        cards.append(
            '<section class="card">'
            f"<h2>{html.escape(item.title)}</h2>"
            f'<a href="{html.escape(preview)}"><img src="{html.escape(preview)}" '
            f'alt="{html.escape(item.title)}" loading="lazy"></a>'
            f'<p class="links">{" · ".join(links)}</p>'
            "</section>"
        )
    page = (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>gradviz lessons</title><style>"
        "body{font-family:system-ui,sans-serif;margin:2rem;background:#fafafa;color:#222}"
        ".grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(320px,1fr));gap:1rem}"
        ".card{background:#fff;border:1px solid #ddd;border-radius:8px;padding:1rem}"
        ".card img{width:100%;height:320px;object-fit:contain}"
        ".links{font-size:.9rem}"
        "</style></head><body><h1>gradviz lessons</h1>"
        "<p>Rendered by <code>make demo</code>. Each lesson: backward and combined views, "
        "every step of the recorded backward pass, and an offline replay where available.</p>"
        f'<div class="grid">{"".join(cards)}</div></body></html>\n'
    )
    path = out / "index.html"
    path.write_text(page, encoding="utf-8")
    return path


def render_assets(folder: Path) -> list[Path]:
    """The README's diagrams: the ten-op lesson, backward and combined, and one step."""
    built = lesson("ten-ops").build()
    graph = trace(*built.roots, names=built.names)
    fresh = lesson("ten-ops").build()
    recording = record(*fresh.roots, names=fresh.names)
    step = folder / "ten-ops-step-3.svg"
    step.write_text(recording.svg(step=3), encoding="utf-8")
    return [
        graph.save(folder / "ten-ops-backward.svg", view="backward"),
        graph.save(folder / "ten-ops-combined.svg", view="combined"),
        step,
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gradviz.demo", description=__doc__)
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
