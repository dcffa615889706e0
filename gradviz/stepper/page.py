"""The stepper's data and the standalone replay page: one HTML file, no network.

The notebook widget (``gradviz.stepper.widget``) and the page share ``stepper_payload`` and the one
front end in ``assets/``. Every user string reaches the page inside JSON whose ``<``, ``>``
and ``&`` are escaped, and the front end inserts it as text, never as markup.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from gradviz.escape import json_text
from gradviz.model.recording import Recording
from gradviz.render.theme import DARK, DEFAULT, Theme
from gradviz.render.watched import collapsed_members
from gradviz.replay.frames import (
    classes_at,
    first_step,
    forward_css,
    replay_born,
    replay_data,
    replay_layout,
)
from gradviz.replay.modules import module_css, module_views, view_options
from gradviz.replay.styles import step_css

__all__ = [
    "asset_text",
    "json_for_script",
    "replay_html",
    "static_html",
    "static_svg",
    "stepper_payload",
]

VIEWS = ("backward", "combined")
SCOPE = "#GVROOT"  # replaced by the front end with a selector unique to each stepper


def _asset_dirs() -> list[Path]:
    package = Path(__file__).resolve().parents[1]  # gradviz/
    return [package / "assets", package.parent / "assets"]  # the wheel's copy, then the checkout's


def asset_text(name: str) -> str:
    """A front-end file: shipped inside the package, or the repo's assets/ when editable."""
    for folder in _asset_dirs():
        path = folder / name
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise FileNotFoundError(
        f"gradviz's front-end file {name!r} is missing (looked in "
        f"{', '.join(str(d) for d in _asset_dirs())}); reinstall torch-gradviz"
    )


def json_for_script(value: Any) -> str:
    """JSON safe inside <script>: no '</script', '<!--' or ']]>' can appear in it."""
    text = json_text(value, compact=True)
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def _svg_element(svg: str) -> str:
    """Graphviz output without the XML prolog, doctype and comments: the <svg> alone."""
    return _COMMENT.sub("", svg[svg.index("<svg") :])


def _dark_remap(light: Theme, dark: Theme) -> str:
    """CSS that recolours an SVG drawn with ``light`` into ``dark`` (CSS beats attributes)."""
    pairs: dict[str, str] = {}

    def add(a: str, b: str) -> None:
        pairs.setdefault(a.lower(), b)

    add(light.background, dark.background)
    for name in ("leaf", "constant", "branch", "node"):
        a, b = getattr(light, name), getattr(dark, name)
        add(a.fill, b.fill)
        add(a.border, b.border)
        add(a.text, b.text)
    add(light.text, dark.text)
    add(light.edge, dark.edge)
    add(light.edge_label, dark.edge_label)
    add(light.step.grad_text, dark.step.grad_text)
    rules = []
    for a, b in pairs.items():
        for attr in ("fill", "stroke"):
            rules.append(f'{SCOPE}.gv-dark svg [{attr}="{a}" i]{{{attr}:{b}}}')
    return "".join(rules)


def stepper_payload(
    recording: Recording, step: int | None = None, **options: Any
) -> dict[str, Any]:
    """Both views laid out once, the schedule, the panel data and the stylesheets.

    ``step`` styles the shipped SVGs (default: the last step); under ``watch()`` negative
    steps are the forward frames (``gradviz.replay.frames``), and ``data`` says where they start.
    """
    options.pop("view", None)
    svgs: dict[str, str] = {}
    theme: Theme = DEFAULT
    prefix = ""
    index = len(recording.steps) if step is None else step
    data: dict[str, Any] = {}
    extra = module_views(recording)
    views = (*VIEWS, *extra)
    depths = [int(v.split("-")[1]) for v in extra if v.startswith("collapsed-")]
    born = replay_born(recording, views, **options)
    for view in views:
        template, render_options = replay_layout(recording, **{**options, **view_options(view)})
        theme = render_options.theme
        prefix = render_options.prefix or recording.graph.prefix
        if not data:
            data = replay_data(recording, prefix, born, depths)
        classes = classes_at(data["schedule"], index, view)
        svgs[view] = _svg_element(template.render(classes))
    if extra:
        data["modules"] = _module_data(recording, prefix, extra)
        _name_modules(recording, data["steps"])
    scoped = step_css(theme, SCOPE)
    plain = step_css(theme)
    if extra:
        scoped += module_css(theme, SCOPE)
        plain += module_css(theme)
    if born:
        scoped += forward_css(theme, SCOPE)
        plain += forward_css(theme)
    if theme == DEFAULT:
        scoped += _dark_remap(DEFAULT, DARK) + step_css(DARK, f"{SCOPE}.gv-dark")
        if extra:
            scoped += module_css(DARK, f"{SCOPE}.gv-dark")
        if born:
            scoped += forward_css(DARK, f"{SCOPE}.gv-dark")
    return {
        "svgs": svgs,
        "data": data,
        "css": {"scoped": scoped, "plain": plain},
        "step": index,
        "view": "backward",
        "prefix": prefix,
    }


DEFAULT_COLLAPSE_DEPTH = 1  # the module view the depth control opens on, when shipped


def _module_data(recording: Recording, prefix: str, views: list[str]) -> dict[str, Any]:
    """What the front end needs to expand a collapsed module: for each collapsed view, each
    box's module and the view it opens in (the next depth, then ``modules``), where the
    module is the cluster ``<prefix>_b_m<index>``."""
    forward = recording.graph.forward
    assert forward is not None
    collapsed = [v for v in views if v.startswith("collapsed-")]
    opens: dict[str, dict[str, dict[str, str]]] = {}
    for position, view in enumerate(collapsed):
        later = [*collapsed[position + 1 :], *[v for v in views if v == "modules"]]
        target = later[0] if later else "backward"
        depth = int(view.split("-")[1])
        opens[view] = {
            f"{prefix}_bm{module}": {
                "module": forward.modules[module].label,
                "opens": target,
                "cluster": f"{prefix}_b_m{module}",
            }
            for module in collapsed_members(recording.graph, depth)
        }
    wanted = f"collapsed-{DEFAULT_COLLAPSE_DEPTH}"
    return {
        "collapsed": collapsed,
        "default": wanted if wanted in collapsed else collapsed[-1],
        "opens": opens,
    }


def _name_modules(recording: Recording, steps: list[dict[str, Any]]) -> None:
    """Each backward step's panel says which module it ran in (where one made its node)."""
    forward = recording.graph.forward
    assert forward is not None
    for step in steps:
        scope = forward.module_for_node(step["node"]) if step.get("node") else None
        if scope is not None:
            step["module"] = scope.label


def _script_safe_js(source: str) -> str:
    lowered = source.lower()
    if "</script" in lowered or "<!--" in lowered:
        raise ValueError("the stepper's JS must not contain '</script' or '<!--'")
    return source


def replay_html(recording: Recording, title: str | None = None, **options: Any) -> str:
    """One self-contained page: the stepper's JS, CSS, both SVGs and the data inline."""
    payload = stepper_payload(recording, **options)  # laid out at the final step
    state = {key: payload[key] for key in ("svgs", "data", "css", "view")}
    state["step"] = first_step(recording)  # the first forward op under watch(), else the seed
    css = asset_text("stepper.css")
    js = _script_safe_js(asset_text("stepper.js"))
    steps = f"{len(recording.steps)} steps"
    if recording.forward_ops:
        steps = f"{len(recording.forward_ops)} forward ops, then {steps}"
    name = title or f"gradviz replay: {steps}"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="color-scheme" content="light dark">\n'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:\">\n"
        f"<title>{html.escape(name)}</title>\n"
        f"<style>body{{margin:12px;background:Canvas;color:CanvasText}}\n{css}</style>\n"
        "</head>\n<body>\n"
        f'<h1 style="font:600 16px sans-serif">{html.escape(name)}</h1>\n'
        '<script type="application/json" class="gv-replay-data">'
        f"{json_for_script(state)}</script>\n"
        "<noscript><p>This replay needs JavaScript; the final step:</p>"
        f"{static_svg(payload)}</noscript>\n"
        f'<script type="module">\n{js}\nmountStandalone();\n</script>\n'
        "</body>\n</html>\n"
    )


def static_svg(payload: dict[str, Any]) -> str:
    """The payload's backward view as laid out (its step's classes), stylesheet inside."""
    svg = str(payload["svgs"]["backward"])
    end = svg.index(">") + 1
    return svg[:end] + f"<style>{payload['css']['plain']}</style>" + svg[end:]


def static_html(recording: Recording, **options: Any) -> str:
    """The notebook's fallback where widgets do not run: the final step, no script."""
    payload = stepper_payload(recording, **options)
    caption = html.escape(
        f"gradviz: backward pass, {len(recording.steps)} steps (final step shown; "
        "run the notebook to step through it)"
    )
    return (
        f'<div class="gv-static"><div>{static_svg(payload)}</div>'
        f'<div style="font:12px sans-serif;opacity:.7">{caption}</div></div>'
    )
