"""What a saved format takes besides the render options, checked before anything is drawn.

``SaveKeywords`` types them for the public ``save`` methods; ``check_save_keywords`` says,
with ``InvalidArgument``, which formats take a keyword the chosen one cannot use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypedDict

from gradviz.errors import InvalidArgument
from gradviz.render.options import RenderKeywords

__all__ = [
    "PAGE_OR_SVG",
    "VIDEO",
    "FilmStripKeywords",
    "PageKeywords",
    "SaveKeywords",
    "check_save_keywords",
]


class PageKeywords(RenderKeywords, total=False):
    """What a page takes besides its ``title`` (see ``SaveKeywords``)."""

    views: Sequence[str] | None
    compress: bool | None
    explain: bool | None
    step: int | None


class SaveKeywords(PageKeywords, total=False):
    """``Recording.save``'s keywords: the render options, plus what a page takes
    (``title``; ``views`` leaves views out; ``compress`` ships the data gzip+base64;
    ``explain`` ships the Memory and Health toggles, default: up to 150 nodes) and
    what the SVG takes (``step``, ``health``), and what a video takes (``size``,
    ``seconds_per_step``; ``fps`` for .mp4). A keyword the chosen format cannot use
    raises ``InvalidArgument``."""

    title: str | None
    health: bool
    size: tuple[int, int]
    seconds_per_step: float
    fps: int


class FilmStripKeywords(TypedDict, total=False):
    """``TrainingRun.save``'s keywords for its .html film strip: the page's ``title``, and
    the thresholds its vanishing and exploding marks use."""

    title: str
    vanishing_below: float
    exploding_above: float


# What each format of ``Recording.save`` takes besides the render options (None: nothing).
_FORMAT_KEYWORDS: dict[str, frozenset[str] | None] = {
    ".svg": frozenset({"step", "health"}),
    ".html": frozenset({"title", "views", "compress", "step", "explain"}),
    ".pdf": frozenset(),
    ".pptx": frozenset(),
    ".mp4": frozenset({"size", "seconds_per_step", "fps"}),
    ".gif": frozenset({"size", "seconds_per_step"}),
    ".json": None,
}
PAGE_OR_SVG = frozenset({"title", "views", "compress", "step", "health", "explain"})
VIDEO = frozenset({"size", "seconds_per_step", "fps"})
_NOT_RENDER = PAGE_OR_SVG | VIDEO  # checked per format


def check_save_keywords(target: Path, options: Mapping[str, object]) -> None:
    """A keyword the chosen format cannot use is a mistake: say which formats take it."""
    allowed = _FORMAT_KEYWORDS.get(target.suffix.lower(), frozenset())
    if allowed is None:
        wrong = sorted(options)
    else:
        wrong = sorted(key for key in options if key in _NOT_RENDER and key not in allowed)
    if wrong:
        takers = {
            key: [fmt for fmt, keys in _FORMAT_KEYWORDS.items() if keys and key in keys]
            for key in wrong
        }
        where = "; ".join(
            f"{key}= is for {', '.join(fmts) if fmts else 'render formats'}"
            for key, fmts in takers.items()
        )
        raise InvalidArgument(f"save({target.name!r}) does not take {', '.join(wrong)}: {where}")
