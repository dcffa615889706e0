"""Themes as data: render code asks for a role's style, the theme answers.

Each role keeps a light fill with dark text (legible on a projector) and its own border
style, so the roles stay apart in greyscale and for colour-blind viewers too.

A custom theme is ``dataclasses.replace(gradviz.THEMES["default"], ...)`` (or a ``Theme``
built whole). Its colours, widths, style words and font go into DOT attributes, SVG and
CSS as they are, so each is checked against a strict grammar when the theme is made (an
``InvalidInput`` names the field); legend labels are any text (escaped when drawn). Values
must be plain ``str`` / ``int`` / ``float``: a subclass could format itself differently
from what was checked.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from gradviz.errors import InvalidInput
from gradviz.model.values import Role

__all__ = ["THEMES", "RoleStyle", "StepStyle", "Theme", "get_theme"]

# What Graphviz and CSS both read as a colour: '#rgb', '#rgba', '#rrggbb', '#rrggbbaa', or
# a name ('white', 'gray50').
_COLOUR = re.compile(
    r"#(?:[0-9A-Fa-f]{3,4}|[0-9A-Fa-f]{6}|[0-9A-Fa-f]{8})|[A-Za-z][A-Za-z0-9]{0,31}"
)
# Graphviz node style words besides "filled" (which gradviz adds itself).
STYLE_WORDS = frozenset(
    ("bold", "dashed", "diagonals", "dotted", "invis", "radial", "rounded", "solid", "striped")
)
# Font family names, comma separated: 'Helvetica,Arial,sans-serif', 'DejaVu Sans'. No
# quotes, brackets or semicolons: Graphviz writes the font into SVG without escaping it.
_FONT = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}(?:, ?[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}){0,7}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}")


def _fail(owner: object, name: str, wanted: str, value: object) -> InvalidInput:
    return InvalidInput(f"{type(owner).__name__}.{name} must be {wanted}, not {value!r}")


def _check(
    owner: object,
    colours: tuple[str, ...],
    numbers: tuple[tuple[str, float, float], ...] = (),
) -> None:
    """Reject a theme value that is not a plain colour, or a number outside its range."""
    for name in colours:
        value = getattr(owner, name)
        if type(value) is not str or _COLOUR.fullmatch(value) is None:
            raise _fail(owner, name, "a colour like '#1f4e99' or 'white'", value)
    for name, low, high in numbers:
        value = getattr(owner, name)
        if type(value) not in (int, float) or not (math.isfinite(value) and low <= value <= high):
            raise _fail(owner, name, f"a number from {low:g} to {high:g}", value)


def _check_text(owner: object, name: str, pattern: re.Pattern[str], wanted: str) -> None:
    value = getattr(owner, name)
    if type(value) is not str or pattern.fullmatch(value) is None:
        raise _fail(owner, name, wanted, value)


@dataclass(frozen=True)
class RoleStyle:
    fill: str
    border: str
    text: str
    border_style: str  # Graphviz style words besides "filled": "", "dashed", "rounded", ...
    legend: str

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Raise ``InvalidInput`` naming the first field that breaks its grammar."""
        _check(self, ("fill", "border", "text"))
        words = self.border_style
        if type(words) is not str or not all(w in STYLE_WORDS for w in words.split(",") if words):
            raise _fail(
                self,
                "border_style",
                f"Graphviz style words like 'dashed' or 'bold,rounded' (from "
                f"{', '.join(sorted(STYLE_WORDS))}), or ''",
                words,
            )
        if type(self.legend) is not str:
            raise _fail(self, "legend", "text", self.legend)


@dataclass(frozen=True)
class StepStyle:
    """How a replay marks what has run, what runs now and what is still to come."""

    active_border: str
    active_width: float
    pending_opacity: float  # the fill of nodes still to come; their text and outline stay
    grad_text: str
    done_border: str
    nonfinite_border: str  # dashed around where a NaN or Inf gradient first appeared

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Raise ``InvalidInput`` naming the first field that breaks its grammar."""
        _check(
            self,
            ("active_border", "grad_text", "done_border", "nonfinite_border"),
            (("active_width", 0.0, 50.0), ("pending_opacity", 0.0, 1.0)),
        )


@dataclass(frozen=True)
class Theme:
    name: str
    background: str
    text: str
    edge: str
    edge_label: str
    font: str
    leaf: RoleStyle
    constant: RoleStyle
    branch: RoleStyle
    node: RoleStyle
    step: StepStyle

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Raise ``InvalidInput`` naming the first field that breaks its grammar; renderers
        call it again, so a theme changed after it was made (``object.__setattr__``) is
        caught before its values reach DOT, SVG or CSS."""
        _check_text(self, "name", _NAME, "a short name of letters, digits, ' ', '.', '_', '-'")
        _check(self, ("background", "text", "edge", "edge_label"))
        _check_text(
            self,
            "font",
            _FONT,
            "font family names like 'Helvetica,Arial,sans-serif' or 'DejaVu Sans'",
        )
        for name in ("leaf", "constant", "branch", "node", "step"):
            value = getattr(self, name)
            wanted = StepStyle if name == "step" else RoleStyle
            if type(value) is not wanted:
                raise _fail(self, name, f"a {wanted.__name__}", value)
            value.check()

    def role(self, role: Role) -> RoleStyle:
        return {
            Role.LEAF: self.leaf,
            Role.CONSTANT: self.constant,
            Role.BRANCH: self.branch,
            Role.NODE: self.node,
        }[role]

    def legend(self) -> list[tuple[Role, RoleStyle]]:
        return [(role, self.role(role)) for role in Role]


FONT = "Helvetica,Arial,sans-serif"

_LEGEND = {
    Role.LEAF: "leaf on the graph",
    Role.CONSTANT: "leaf off the graph",
    Role.BRANCH: "branch (non-leaf)",
    Role.NODE: "backward node",
}


def _roles(
    leaf: tuple[str, str, str],
    constant: tuple[str, str, str],
    branch: tuple[str, str, str],
    node: tuple[str, str, str],
) -> dict[str, RoleStyle]:
    return {
        "leaf": RoleStyle(*leaf, border_style="bold", legend=_LEGEND[Role.LEAF]),
        "constant": RoleStyle(*constant, border_style="dashed", legend=_LEGEND[Role.CONSTANT]),
        "branch": RoleStyle(*branch, border_style="", legend=_LEGEND[Role.BRANCH]),
        "node": RoleStyle(*node, border_style="rounded", legend=_LEGEND[Role.NODE]),
    }


DEFAULT = Theme(
    name="default",
    background="white",
    text="#1a1a1a",
    edge="#4a4a4a",
    edge_label="#1f4e99",
    font=FONT,
    **_roles(
        leaf=("#c8e6c9", "#2e7d32", "#10331a"),
        constant=("#fff3b0", "#a07800", "#3d2f00"),
        branch=("#e9d3c0", "#6d4c41", "#3b2a22"),
        node=("#cfe2ff", "#1f4e99", "#0b2244"),
    ),
    step=StepStyle(
        active_border="#d62728",
        active_width=3.5,
        pending_opacity=0.35,
        grad_text="#b3261e",
        done_border="#1f4e99",
        nonfinite_border="#e6007e",
    ),
)

DARK = Theme(
    name="dark",
    background="#1e1e1e",
    text="#e8e8e8",
    edge="#b0b0b0",
    edge_label="#9ecbff",
    font=FONT,
    **_roles(
        leaf=("#1e4d2b", "#81c784", "#e8f5e9"),
        constant=("#4d4210", "#e6c84a", "#fff8d6"),
        branch=("#4a3428", "#c9a48a", "#f5e6da"),
        node=("#173a66", "#82b1ff", "#e3efff"),
    ),
    step=StepStyle(
        active_border="#ff6b6b",
        active_width=3.5,
        pending_opacity=0.35,
        grad_text="#ffb4a9",
        done_border="#82b1ff",
        nonfinite_border="#ff5cd6",
    ),
)

# Okabe-Ito hues, lightened; roles also differ by border style.
COLORBLIND = Theme(
    name="colorblind",
    background="white",
    text="#1a1a1a",
    edge="#4a4a4a",
    edge_label="#0072b2",
    font=FONT,
    **_roles(
        leaf=("#b8e4d6", "#009e73", "#003d2c"),
        constant=("#f7f0a8", "#8a7f00", "#3a3500"),
        branch=("#f6d3b0", "#d55e00", "#4a2000"),
        node=("#bcd9ee", "#0072b2", "#002c45"),
    ),
    step=StepStyle(
        active_border="#cc79a7",
        active_width=4.0,
        pending_opacity=0.35,
        grad_text="#cc3d00",
        done_border="#0072b2",
        nonfinite_border="#cc79a7",
    ),
)

GREYSCALE = Theme(
    name="greyscale",
    background="white",
    text="#000000",
    edge="#333333",
    edge_label="#000000",
    font=FONT,
    **_roles(
        leaf=("#d9d9d9", "#000000", "#000000"),
        constant=("#ffffff", "#555555", "#000000"),
        branch=("#b3b3b3", "#000000", "#000000"),
        node=("#f2f2f2", "#000000", "#000000"),
    ),
    step=StepStyle(
        active_border="#000000",
        active_width=4.5,
        pending_opacity=0.3,
        grad_text="#000000",
        done_border="#000000",
        nonfinite_border="#000000",
    ),
)

THEMES: dict[str, Theme] = {t.name: t for t in (DEFAULT, DARK, COLORBLIND, GREYSCALE)}


def get_theme(theme: str | Theme) -> Theme:
    """A theme by name (``default``, ``dark``, ``colorblind``, ``greyscale``) or as given."""
    if isinstance(theme, Theme):
        return theme
    try:
        return THEMES[theme]
    except KeyError:
        raise ValueError(
            f"unknown theme {theme!r}; choose one of {', '.join(THEMES)} or pass a Theme"
        ) from None
