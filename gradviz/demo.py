"""``python -m gradviz.demo OUT``: render every built-in lesson into OUT (``make demo``).

``--assets DIR`` writes the example diagrams the README shows instead.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gradviz.lessons import LESSONS, lesson
from gradviz.trace import trace

__all__ = ["main", "render_assets", "render_lessons"]

VIEWS = ("backward", "combined")


def render_lessons(out: Path) -> list[Path]:
    written: list[Path] = []
    for item in LESSONS:
        built = item.build()
        graph = trace(*built.roots, names=built.names)
        for view in VIEWS:
            written.append(graph.save(out / item.slug / f"{view}.svg", view=view))
    return written


def render_assets(folder: Path) -> list[Path]:
    """The README's diagrams: the ten-op lesson, backward and combined."""
    built = lesson("ten-ops").build()
    graph = trace(*built.roots, names=built.names)
    return [
        graph.save(folder / "ten-ops-backward.svg", view="backward"),
        graph.save(folder / "ten-ops-combined.svg", view="combined"),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gradviz.demo", description=__doc__)
    parser.add_argument("out", nargs="?", default="out", type=Path)
    parser.add_argument("--assets", type=Path, help="write the README's diagrams here")
    args = parser.parse_args(argv)
    where = args.assets if args.assets is not None else args.out
    written = render_assets(where) if args.assets is not None else render_lessons(where)
    for path in written:
        print(f"  wrote {path}")
    print(f"==> {len(written)} files in {where}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
