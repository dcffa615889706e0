"""The stepper takes the light or dark theme of the notebook front end it is shown in, from
that front end's own marks on the page: JupyterLab's ``body[data-jp-theme-light]`` and
``--jp-*`` colours, VS Code's ``vscode-light`` / ``vscode-dark`` body classes and
``--vscode-*`` colours, Colab's ``html[theme]``, marimo's ``body[data-theme]``. Each page
asks the system for the opposite scheme, so only the front end's mark can give the right
one; the marks are then switched, as the front end does when its theme changes, and the
stepper follows. Colours are the computed ones, measured in Chromium."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import gradviz
from gradviz.teaching.lessons import lesson
from tests.support.browser import chromium

pytestmark = [pytest.mark.browser, pytest.mark.needs_dot]

# Each front end's marks for (light, dark): attributes and classes on <html> and <body>, and
# the colours it defines (what the stepper's background and text must then be).
FRONT_ENDS: dict[str, dict[str, dict[str, Any]]] = {
    "jupyterlab": {
        "light": {
            "body": {"data-jp-theme-light": "true"},
            "vars": {"--jp-layout-color1": "#ffffff", "--jp-ui-font-color1": "#212121"},
            "background": (255, 255, 255),
        },
        "dark": {
            "body": {"data-jp-theme-light": "false"},
            "vars": {"--jp-layout-color1": "#111111", "--jp-ui-font-color1": "#e0e0e0"},
            "background": (17, 17, 17),
        },
    },
    "vscode": {
        "light": {
            "class": "vscode-light",
            "vars": {
                "--vscode-editor-background": "#ffffff",
                "--vscode-editor-foreground": "#3b3b3b",
            },
            "background": (255, 255, 255),
        },
        "dark": {
            "class": "vscode-dark",
            "vars": {
                "--vscode-editor-background": "#1f1f1f",
                "--vscode-editor-foreground": "#cccccc",
            },
            "background": (31, 31, 31),
        },
    },
    "colab": {
        "light": {"html": {"theme": "light"}},
        "dark": {"html": {"theme": "dark"}},
    },
    "marimo": {
        "light": {"class": "light light-theme", "body": {"data-theme": "light"}},
        "dark": {"class": "dark dark-theme", "body": {"data-theme": "dark"}},
    },
}

# Put one front end's marks on the page, as it does when its theme is set or switched.
SET_MARKS = """(marks) => {
  const html = document.documentElement, body = document.body;
  for (const a of ['data-jp-theme-light', 'data-theme']) body.removeAttribute(a);
  html.removeAttribute('theme');
  body.className = marks.class || '';
  for (const [k, v] of Object.entries(marks.body || {})) body.setAttribute(k, v);
  for (const [k, v] of Object.entries(marks.html || {})) html.setAttribute(k, v);
  html.removeAttribute('style');
  for (const [k, v] of Object.entries(marks.vars || {})) html.style.setProperty(k, v);
}"""

# SET_MARKS run as soon as <body> exists, before the page's own scripts.
MARK_ON_LOAD = (
    "new MutationObserver((_, observer) => { if (document.body) { observer.disconnect();"
    f" ({SET_MARKS})(MARKS); }} }}).observe(document, {{ childList: true, subtree: true }});"
)


def _marks(marks: dict[str, Any]) -> dict[str, Any]:
    """What SET_MARKS takes: the marks without the colours expected from them."""
    return {k: v for k, v in marks.items() if k != "background"}


# The stepper's computed colours: its background, its text, and each node's text over the
# node's own fill (nodes without a fill show the stepper's background).
COLOURS = """(root) => {
  const rgba = (text) => {
    const m = text.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return null;
    const p = m[1].split(',').map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const s = getComputedStyle(root);
  const nodes = [];
  for (const g of root.querySelectorAll('.gv-canvas svg g.node')) {
    const text = g.querySelector('text');
    if (!text || getComputedStyle(text).visibility === 'hidden') continue;
    const shape = g.querySelector(':scope > path, :scope > polygon, :scope > ellipse');
    const fill = shape ? rgba(getComputedStyle(shape).fill) : null;
    const opacity = shape ? Number(getComputedStyle(shape).fillOpacity) : 0;
    nodes.push({ id: g.id, text: rgba(getComputedStyle(text).fill),
                 fill: fill ? [fill[0], fill[1], fill[2], fill[3] * opacity] : [0, 0, 0, 0] });
  }
  return { dark: root.classList.contains('gv-dark'), background: rgba(s.backgroundColor),
           color: rgba(s.color), nodes };
}"""


def _luminance(rgb: tuple[float, ...]) -> float:
    def linear(channel: float) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    """WCAG 2's contrast ratio of two opaque colours."""
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _over(top: list[float], under: tuple[float, ...]) -> tuple[float, ...]:
    """``top`` (r, g, b, alpha) composited over an opaque colour."""
    alpha = top[3]
    return tuple(alpha * c + (1 - alpha) * u for c, u in zip(top[:3], under[:3], strict=True))


def _check(seen: dict[str, Any], scheme: str, marks: dict[str, Any]) -> None:
    assert seen["dark"] == (scheme == "dark"), seen["dark"]
    background = tuple(seen["background"][:3])
    assert seen["background"][3] == 1, seen["background"]
    if "background" in marks:  # the front end's own colour
        assert background == marks["background"], background
    light = _luminance(background)
    assert light < 0.05 if scheme == "dark" else light > 0.8, background
    assert _contrast(_over(seen["color"], background), background) >= 4.5, seen["color"]
    assert seen["nodes"], "no node text drawn"
    for node in seen["nodes"]:
        behind = _over(node["fill"], background)
        assert _contrast(_over(node["text"], behind), behind) >= 4.5, (scheme, node)


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = lesson("05-ten-ops").build()
    recording = gradviz.record(*built.roots, names=built.names)
    return recording.save(tmp_path_factory.mktemp("themes") / "replay.html")


@pytest.mark.parametrize("front_end", list(FRONT_ENDS))
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_stepper_takes_and_follows_the_front_ends_theme(
    replay: Path, tmp_path: Path, front_end: str, scheme: str
) -> None:
    other = "light" if scheme == "dark" else "dark"
    marks = FRONT_ENDS[front_end]
    with chromium(tmp_path / "profile", color_scheme=other) as context:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        # the front end's marks are on the page before the stepper mounts
        page.add_init_script(MARK_ON_LOAD.replace("MARKS", json.dumps(_marks(marks[scheme]))))
        page.goto(replay.as_uri(), wait_until="load")
        root = page.wait_for_selector(".gv-stepper")
        page.keyboard.press("PageDown")
        page.keyboard.press("PageDown")
        assert root.get_attribute("data-step") == "2"
        _check(page.evaluate(COLOURS, root), scheme, marks[scheme])

        page.evaluate(SET_MARKS, _marks(marks[other]))  # the front end's theme is switched
        wanted = "true" if other == "dark" else "false"
        page.wait_for_function(
            f"(r) => String(r.classList.contains('gv-dark')) === '{wanted}'", arg=root
        )
        _check(page.evaluate(COLOURS, root), other, marks[other])
        assert not errors, errors
