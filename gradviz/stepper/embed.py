"""What a notebook keeps of a stepper for the places where the widget cannot run.

A notebook saved without widget state, or exported to HTML (nbconvert, nbviewer, Jupyter
Book), has no kernel to talk to; the widget view then draws nothing. Beside it the stepper
leaves ``fallback_bundle``: an offline stepper (``text/html``, the replay page's data and
script inline, nothing fetched) that opens on the view the widget shows, with a static
picture of that view's final step inside it for where scripts do not run, and the same
picture as ``image/svg+xml`` for where HTML is not shown at all.

The bundle is kept under ``EMBED_BYTES``: above it the stepper is left out (only the picture
and a note saying how to get the offline page), and above it again the picture too.
"""

from __future__ import annotations

import html
from typing import Any

from gradviz.stepper.page import _page_data, _script_safe_js, asset_text, compact_css, packed_state

__all__ = ["EMBED_BYTES", "fallback_bundle"]

# The most a stepper's fallback adds to a notebook (each display of it, in its .ipynb and
# in an exported page). Measured: a five-node lesson's is 100 kB (60 of them the front end),
# a watched 98-node MLP's 295 kB (its data gzip-packed, the Memory and Health data in it).
EMBED_BYTES = 2_000_000


def _state(state: dict[str, Any]) -> dict[str, Any]:
    """The widget's traits as the offline page ships them: only the views laid out so far
    (the page has no kernel to lay out the others) and when each element appears, in one
    map (the widget keeps views laid out later in ``born``)."""
    svgs: dict[str, str] = dict(state["svgs"])
    data = dict(state["data"])
    schedule = dict(data["schedule"])
    born = {**schedule.get("born", {}), **state.get("born", {})}
    if born:
        schedule["born"] = {view: frames for view, frames in born.items() if view in svgs}
    data["schedule"] = schedule
    data["views"] = [view for view in data.get("views", list(svgs)) if view in svgs]
    return {
        "svgs": svgs,
        "css": state["css"],
        "view": state["view"],
        "step": state["step"],
        "data": _page_data(data, svgs),
    }


def _note(text: str) -> str:
    return f'<div style="font:12px sans-serif;opacity:.7">{html.escape(text)}</div>'


def fallback_bundle(state: dict[str, Any], picture: str, token: str, steps: int) -> dict[str, str]:
    """The mime bundle for ``state`` (the stepper widget's traits: svgs, data, css, view,
    step, born) and ``picture`` (its view's final step, a standalone SVG), marked with
    ``token`` for the live widget to hide it; ``steps``: the number of backward steps, for
    the caption."""
    view = str(state["view"])
    caption = f"gradviz: {view} view, {steps} steps (final step shown)"
    plain = f"{caption}; the stepper needs its notebook's kernel or a browser"
    mark = html.escape(token, quote=True)
    holder = f'<div class="gv-static" data-gv-fallback="{mark}">'
    styles = (
        f"<style>{compact_css(asset_text('stepper.css') + asset_text('explain.css'))}"
        f"{_hide_dead_widget(mark)}</style>"
    )
    shown = f'<div class="gv-picture"><div>{picture}</div>{_note(caption)}</div>'
    attributes, text = packed_state(_state(state))
    script = page_script_embedded()
    page = (
        f"{holder}{styles}{shown}<script {attributes}>{text}</script>"
        f'<script type="module">\n{script}\n</script></div>'
    )
    if len(page.encode("utf-8")) <= EMBED_BYTES:
        return {"text/html": page, "image/svg+xml": picture, "text/plain": plain}
    save = (
        f"This stepper ({len(page.encode('utf-8')) // 1000} kB) is more than a notebook "
        "output should carry, so only the final step is kept here; recording.save("
        '"replay.html") writes the offline stepper.'
    )
    small = f'{holder}<div class="gv-picture"><div>{picture}</div>{_note(caption)}{_note(save)}'
    small += "</div></div>"
    if len(small.encode("utf-8")) <= EMBED_BYTES:
        return {"text/html": small, "image/svg+xml": picture, "text/plain": f"{plain}\n{save}"}
    save = save.replace("only the final step is kept here", "its picture is left out too")
    return {"text/html": f"{holder}{_note(caption)}{_note(save)}</div>", "text/plain": save}


def page_script_embedded() -> str:
    """The front end an output inlines: every feature, mounting each fallback in the page."""
    return _script_safe_js(asset_text("stepper-embedded.js"))


def _hide_dead_widget(mark: str) -> str:
    """JupyterLab, reopening a notebook saved without widget state, writes "Error displaying
    widget: model not found" where the widget was (the output right after this one): its
    text only, no element. The fallback stands in for it, so that message is hidden."""
    return (
        f'.jp-OutputArea-child:has([data-gv-fallback="{mark}"])+.jp-OutputArea-child'
        ">.jp-OutputArea-output.jupyter-widgets:not(:has(*)){display:none}"
    )
