"""A theme cannot put markup or script into the DOT, the SVG, the page or the widget.

Every field of ``Theme``, ``RoleStyle`` and ``StepStyle`` (found by ``dataclasses.fields``,
so a field added later is covered too) is checked against a strict grammar when the theme
is made, and again before rendering (a theme changed with ``object.__setattr__``). As a
second line, the replay page's Content-Security-Policy lets only the page's own script run
(by its sha256): markup injected into the page cannot run even if it got there.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import torch

import gradviz
from gradviz.errors import GradvizError, InvalidInput
from gradviz.render.theme import DEFAULT, THEMES, RoleStyle, StepStyle, Theme
from gradviz.stepper.page import replay_html, static_html, stepper_payload, unpack_state
from tests.support.inert import assert_inert_page, assert_inert_payload, assert_inert_svg

INJECTIONS = [
    '"><script>alert(1)</script>',
    "red}</style><script>alert(1)</script>",
    "Arial\"/><script xmlns='http://www.w3.org/2000/svg'>alert(1)</script><x a=\"",
    "red;background:url(https://example.invalid/x)",
    "red\n",
    " red",
]
FREE_TEXT = {("RoleStyle", "legend")}  # any text: escaped where drawn


def field_paths() -> list[tuple[str | None, str, type]]:
    """(nested field or None, field name, its class) for every field a theme has."""
    paths: list[tuple[str | None, str, type]] = []
    for outer in dataclasses.fields(Theme):
        value = getattr(DEFAULT, outer.name)
        if dataclasses.is_dataclass(value):
            paths += [(outer.name, inner.name, type(value)) for inner in dataclasses.fields(value)]
        else:
            paths.append((None, outer.name, Theme))
    return paths


PATHS = [p for p in field_paths() if (p[2].__name__, p[1]) not in FREE_TEXT]


def with_value(outer: str | None, name: str, value: Any) -> Theme:
    if outer is None:
        return dataclasses.replace(DEFAULT, **{name: value})
    inner = dataclasses.replace(getattr(DEFAULT, outer), **{name: value})
    return dataclasses.replace(DEFAULT, **{outer: inner})


def test_every_field_is_covered() -> None:
    names = {(cls.__name__, name) for _, name, cls in field_paths()}
    assert ("StepStyle", "nonfinite_border") in names and ("Theme", "font") in names
    assert len(PATHS) == len(field_paths()) - 4  # the four legend labels are free text


@pytest.mark.parametrize("injection", INJECTIONS)
@pytest.mark.parametrize(("outer", "name", "owner"), PATHS)
def test_every_field_refuses_markup(
    outer: str | None, name: str, owner: type, injection: str
) -> None:
    with pytest.raises(InvalidInput, match=rf"{owner.__name__}\.{name} must be") as caught:
        with_value(outer, name, injection)
    assert isinstance(caught.value, GradvizError) and isinstance(caught.value, ValueError)


class Sneaky(str):
    """A str that formats itself as something else than what a check reads."""

    def __format__(self, spec: str) -> str:
        return "red}</style><script>alert(1)</script>"

    def __str__(self) -> str:
        return self.__format__("")


class SneakyFloat(float):
    def __format__(self, spec: str) -> str:
        return "1}</style><script>alert(1)</script>"


@pytest.mark.parametrize(("outer", "name", "owner"), PATHS)
def test_subclasses_that_format_differently_are_refused(
    outer: str | None, name: str, owner: type
) -> None:
    original = getattr(DEFAULT if outer is None else getattr(DEFAULT, outer), name)
    sneaky: Any = SneakyFloat(original) if isinstance(original, float) else Sneaky(original)
    with pytest.raises(InvalidInput, match=rf"{name} must be"):
        with_value(outer, name, sneaky)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("active_width", float("nan")),
        ("active_width", float("inf")),
        ("active_width", -1.0),
        ("active_width", True),
        ("pending_opacity", 1.5),
        ("pending_opacity", "0.3"),
    ],
)
def test_numbers_have_a_range(name: str, value: Any) -> None:
    with pytest.raises(InvalidInput, match=rf"StepStyle\.{name} must be a number from"):
        with_value("step", name, value)


@pytest.mark.parametrize(
    ("outer", "name", "value"),
    [
        (None, "font", "DejaVu Sans"),
        (None, "font", "Helvetica, Arial, sans-serif"),
        (None, "font", "Noto Sans CJK JP,monospace"),
        (None, "name", "my theme 2"),
        (None, "background", "#abc"),
        ("leaf", "fill", "#aabbccdd"),
        ("leaf", "border", "gray50"),
        ("node", "border_style", "bold,rounded"),
        ("branch", "border_style", ""),
        ("step", "nonfinite_border", "#ff00ff"),
        ("step", "active_width", 2),
    ],
)
def test_ordinary_values_are_accepted(outer: str | None, name: str, value: Any) -> None:
    assert (
        getattr(
            with_value(outer, name, value)
            if outer is None
            else getattr(with_value(outer, name, value), outer),
            name,
        )
        == value
    )


@pytest.mark.parametrize("value", ["#abcde", "#1234567", "red blue", "dashed;x", "bold,,x"])
def test_near_misses_are_refused(value: str) -> None:
    with pytest.raises(InvalidInput):
        with_value("leaf", "fill", value)
    with pytest.raises(InvalidInput):
        with_value("leaf", "border_style", value)


def tampered(outer: str | None, name: str, value: str) -> Theme:
    """A valid theme changed after it was made, past its checks."""
    theme = dataclasses.replace(DEFAULT, name="tampered")
    if outer is not None:  # a copy: the preset's own styles must stay as they are
        theme = dataclasses.replace(theme, **{outer: dataclasses.replace(getattr(theme, outer))})
    owner = theme if outer is None else getattr(theme, outer)
    assert owner is not (DEFAULT if outer is None else getattr(DEFAULT, outer))
    object.__setattr__(owner, name, value)
    return theme


def small_recording() -> gradviz.Recording:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    return gradviz.record((x * x).sum(), names={"x": x})


@pytest.mark.parametrize(
    ("outer", "name"), [(None, "font"), ("step", "nonfinite_border"), ("leaf", "fill")]
)
def test_renderers_check_the_theme_again(outer: str | None, name: str) -> None:
    theme = tampered(outer, name, INJECTIONS[0])
    recording = small_recording()
    with pytest.raises(InvalidInput, match=name):
        recording.graph.to_dot(theme=theme)
    with pytest.raises(InvalidInput, match=name):
        stepper_payload(recording, theme=theme)


# -- the font reaches every SVG and the notebook's static fallback ------
FONTS = ["DejaVu Sans", "Helvetica,Arial,sans-serif", "Noto Sans-Bold.x_1"]


@pytest.mark.needs_dot
@pytest.mark.parametrize("font", FONTS)
def test_allowed_fonts_keep_svg_and_fallback_inert(font: str) -> None:
    theme = dataclasses.replace(DEFAULT, font=font)
    recording = small_recording()
    svg = recording.graph.svg(theme=theme)
    assert_inert_svg(svg)
    families = {
        e.get("font-family") for e in ET.fromstring(svg).iter() if e.get("font-family") is not None
    }
    # one family everywhere; the embedded Graphviz may rewrite a list's fallbacks
    # ("Helvetica,Arial,sans-serif" comes out as "Helvetica,sans-Serif"), never the first
    assert len(families) == 1
    assert next(iter(families)).split(",")[0] == font.split(",")[0]
    payload = stepper_payload(recording, theme=theme)
    assert_inert_payload(payload)
    fallback = static_html(recording, theme=theme)
    assert_inert_svg(fallback.split("<div>", 1)[1].rsplit("</div><div", 1)[0])
    pytest.importorskip("anywidget")
    from gradviz.stepper.widget import Stepper

    bundle = Stepper(recording, theme=theme)._repr_mimebundle_()
    assert bundle is not None
    html = bundle[0]["text/html"]
    # the offline stepper's two scripts only: its data (JSON) and the bundled front end
    scripts = re.findall(r"<script([^>]*)>", html)
    assert scripts == [' type="application/json" class="gv-replay-data"', ' type="module"']
    assert_inert_payload(unpack_state(html))
    assert_inert_svg(bundle[0]["image/svg+xml"])


@pytest.mark.parametrize("font", [INJECTIONS[0], INJECTIONS[2], 'Arial"', "Arial;x", "A<b>"])
def test_fonts_that_would_break_the_svg_are_refused(font: str) -> None:
    with pytest.raises(InvalidInput, match=r"Theme\.font must be font family names"):
        dataclasses.replace(DEFAULT, font=font)


@pytest.mark.parametrize("theme", list(THEMES))
def test_presets_pass_their_own_checks(theme: str) -> None:
    THEMES[theme].check()
    for name in ("leaf", "constant", "branch", "node"):
        assert type(getattr(THEMES[theme], name)) is RoleStyle
    assert type(THEMES[theme].step) is StepStyle


# -- the page's Content-Security-Policy -------------------------------------------------
def page_policy(page: str) -> str:
    found = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert found is not None
    return found.group(1)


@pytest.mark.needs_dot
def test_page_policy_allows_only_its_own_script() -> None:
    page = replay_html(small_recording())
    policy = page_policy(page)
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert "unsafe-inline" not in directives["script-src"]
    assert "unsafe-eval" not in directives["script-src"]
    assert directives["default-src"] == "'none'"
    module = page.split('<script type="module">', 1)[1].split("</script>", 1)[0]
    check = page.split('<script class="gv-damaged-check">', 1)[1].split("</script>", 1)[0]
    digests = [
        base64.b64encode(hashlib.sha256(s.encode("utf-8")).digest()).decode()
        for s in (module, check)
    ]
    assert directives["script-src"] == " ".join(f"'sha256-{d}'" for d in digests)
    assert_inert_page(page)


INJECTED = (
    "<script>window.gvPwned = 'script'</script>"
    '<img src="data:," onerror="window.gvPwned = \'onerror\'">'
    "<svg onload=\"window.gvPwned = 'onload'\"></svg>"
    '<a id="gvlink" href="javascript:window.gvPwned=\'link\'">x</a>'
)

# What the page's policy blocks from now on, as "blocked-URI directive".
BLOCKED = """() => { window.gvBlocked = [];
  document.addEventListener("securitypolicyviolation",
    (e) => window.gvBlocked.push(`${e.blockedURI} ${e.violatedDirective}`)); }"""


@pytest.mark.browser
@pytest.mark.needs_dot
def test_injected_markup_cannot_run_in_chromium(tmp_path: Path) -> None:
    """The second line: markup that got into the page anyway is blocked by the policy,
    and the page's own stepper still mounts and steps."""
    pytest.importorskip("playwright")
    from tests.support.browser import chromium, open_local

    page_text = replay_html(small_recording())
    page_text = page_text.replace("<body>\n", "<body>\n" + INJECTED, 1)
    path = tmp_path / "injected.html"
    path.write_text(page_text, encoding="utf-8")
    with chromium(tmp_path / "profile") as context:
        page, requests, errors = open_local(context, path)
        root = page.wait_for_selector(".gv-stepper")
        page.evaluate(BLOCKED)
        page.click("#gvlink")
        # a state, not a pause: the policy has blocked the link's script (it reports that)
        page.wait_for_function("() => window.gvBlocked.some((v) => v.startsWith('inline'))")
        assert page.evaluate("window.gvPwned === undefined")
        assert errors == []
        step = int(page.evaluate("(root) => root.dataset.step", root))
        page.click(".gv-next")
        page.wait_for_function(f"(root) => root.dataset.step === '{step + 1}'", arg=root)
        assert page.evaluate("(root) => root.querySelectorAll('svg .gv_active').length", root)
        page.screenshot(path=str(tmp_path / "injected.png"))
        assert all(url.startswith(("file:", "data:", "blob:")) for url in requests)
