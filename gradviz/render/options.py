"""How to draw: ``RenderOptions`` (checked, internal) and ``RenderKeywords`` (the typed
keywords the public ``svg()``/``save()``/``to_dot()`` accept)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypedDict

from typing_extensions import Unpack

from gradviz.errors import InvalidArgument, InvalidInput
from gradviz.render.frontier import collapse_spec
from gradviz.render.theme import Theme, get_theme

__all__ = ["RenderKeywords", "RenderOptions", "StyleKeywords", "View"]

View = Literal["backward", "combined", "forward"]

_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
_DIRECTIONS = {"TB": "TB", "LR": "LR", "top-down": "TB", "left-right": "LR", "BT": "BT", "RL": "RL"}


@dataclass(frozen=True)
class RenderOptions:
    """How to draw: the view, direction, what to show, the theme and the id prefix."""

    view: View = "backward"
    direction: str = "TB"
    saved: bool = False
    shapes: bool = True
    # False: tensor boxes show shape and dtype but no values, so no tensor is summarized
    # (a structure-only drawing reads no tensor values; gradviz.capture.ondemand); True:
    # every tensor's values; "auto": those within a budget, smallest first
    # (gradviz.render.value_budget)
    values: bool | Literal["auto"] = "auto"
    legend: bool = True
    theme: Theme = field(default_factory=lambda: get_theme("default"))
    prefix: str | None = None  # SVG id prefix; the graph's own when None
    edge_labels: Mapping[str, str] = field(default_factory=dict)  # edge key -> gradient text
    link_labels: Mapping[str, str] = field(default_factory=dict)  # tensor id -> gradient text
    # with gradviz.watch() data (gradviz.render.watched): module clusters, collapsing, marks
    modules: bool = False  # cluster nodes and ops by the nn.Module that created them
    collapse_depth: int | None = None  # draw modules this deep (0: top level) as one box
    # or these modules (before collapse_depth): "auto", their paths (gradviz.render.frontier)
    collapse: int | str | tuple[str, ...] | None = None
    marks: tuple[str, ...] = ()  # node / tensor / forward-tensor ids to draw marked
    # edge key -> (pen width, colour): the gradient-health overlay (gradviz.analysis.health)
    edge_styles: Mapping[str, tuple[float, str]] = field(default_factory=dict)
    # draw runs of identical blocks as one "N × block" box (gradviz.render.fold); an int sets
    # the fewest repeats that fold (True: 2)
    fold: bool | int = False

    @classmethod
    def make(cls, **options: Unpack[RenderKeywords]) -> RenderOptions:
        """Options from keywords, checked, with friendly names accepted. The options made
        from plain values (flags, names, numbers: ``to_dot(values=False)``) are kept and
        given again: a frozen value, and making one cost more than a small drawing's DOT."""
        if cls is not RenderOptions:  # only the base class's options are kept
            return cls._made(**options)
        key = tuple(options.items())
        try:
            kept = _MADE.get(key)
        except TypeError:  # an unhashable value (a dict of labels): made each time
            kept = None
        # True == 1 as keys: the values' types must match too; and a theme by name must
        # still be the one THEMES holds under that name
        if (
            kept is not None
            and kept[0] == tuple(map(type, options.values()))
            and kept[1].theme is get_theme(options.get("theme", "default"))
        ):
            return kept[1]
        made = cls._made(**options)
        if all(type(value) in _PLAIN for value in options.values()):
            if len(_MADE) >= _MAX_MADE:
                _MADE.clear()
            _MADE[key] = (tuple(map(type, options.values())), made)
        return made

    @classmethod
    def _made(cls, **options: Any) -> RenderOptions:
        unknown = set(options) - set(cls.__dataclass_fields__)
        if unknown:
            raise InvalidArgument(
                f"unknown render option(s) {sorted(unknown)}; "
                f"known: {sorted(cls.__dataclass_fields__)}"
            )
        if "theme" in options:
            made = cls(**{**options, "theme": get_theme(options["theme"])})
        else:
            made = cls(**options)
        if made.collapse is not None:  # a list of names kept as a tuple: options are frozen
            made = replace(made, collapse=collapse_spec(made.collapse))
        if made.view not in ("backward", "combined", "forward"):
            raise InvalidArgument(
                f"view must be 'backward', 'combined' or 'forward', not {made.view!r}"
            )
        if made.prefix is not None and (
            type(made.prefix) is not str or _PREFIX.fullmatch(made.prefix) is None
        ):
            raise InvalidInput(
                "prefix must be letters, digits, '_' or '-' (it starts every SVG id), "
                f"not {made.prefix!r}"
            )
        if not (made.values is True or made.values is False or made.values == "auto"):
            raise InvalidArgument(
                f"values= takes True (every tensor's), False (none) or 'auto' (the default: "
                f"as many as a quick drawing reads), not {made.values!r}"
            )
        if made.direction not in _DIRECTIONS:
            raise ValueError(
                f"direction must be one of {sorted(_DIRECTIONS)}, not {made.direction!r}"
            )
        direction = _DIRECTIONS[made.direction]
        return made if direction is made.direction else replace(made, direction=direction)


# RenderOptions.make's kept options: keywords -> (their values' types, the options)
_MADE: dict[tuple[tuple[str, Any], ...], tuple[tuple[type, ...], RenderOptions]] = {}
_MAX_MADE = 256
_PLAIN = (bool, int, float, str, type(None))


class StyleKeywords(TypedDict, total=False):
    """The render options except ``view``: what a stepper takes, which shows every view.
    Written out for the type checker; ``tests/test_options_agree.py`` holds them to
    ``RenderOptions``'s fields."""

    direction: str
    saved: bool
    shapes: bool
    values: bool | Literal["auto"]
    legend: bool
    theme: Theme | str
    prefix: str | None
    edge_labels: Mapping[str, str]
    link_labels: Mapping[str, str]
    modules: bool
    collapse_depth: int | None
    collapse: int | str | tuple[str, ...] | list[str] | None
    marks: tuple[str, ...]
    edge_styles: Mapping[str, tuple[float, str]]
    fold: bool | int


class RenderKeywords(StyleKeywords, total=False):
    """The render options as keywords: ``graph.svg(view="combined", theme="dark")``.

    Each key is a field of ``RenderOptions``; ``theme`` also takes a theme's name.
    """

    view: View
