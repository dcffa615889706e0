"""Step styles: one Graphviz layout restyled per step by class, and the stylesheet for it."""

from __future__ import annotations

import re
from collections.abc import Mapping

from gradviz.render.theme import Theme

__all__ = ["SvgTemplate", "step_css"]

_GROUP = re.compile(r'<g id="(?P<id>[^"]+)" class="(?P<cls>[^"]*)">')
_TEXT = re.compile(r"<text ")


class SvgTemplate:
    """One Graphviz layout, restyled per step by rewriting the class of elements by id.

    Node and edge positions never change between steps: only ``class`` attributes do, and
    one stylesheet (``step_css``) turns classes into looks, here and in the browser alike.
    """

    def __init__(self, svg: str, grad_label_ids: set[str]) -> None:
        self.parts: list[str] = []
        self.ids: list[str] = []
        self.base: list[str] = []
        position = 0
        for match in _GROUP.finditer(svg):
            self.parts.append(svg[position : match.start("cls")])
            self.ids.append(match.group("id"))
            self.base.append(match.group("cls"))
            position = match.end("cls")
        tail = svg[position:]
        self.parts.append(tail)
        # the first <text> of an edge that carries a gradient label is that label
        for index, element_id in enumerate(self.ids):
            if element_id in grad_label_ids:
                following = self.parts[index + 1]
                self.parts[index + 1] = _TEXT.sub('<text class="gv_grad" ', following, count=1)

    def render(self, classes: Mapping[str, str], css: str = "") -> str:
        out: list[str] = []
        for part, element_id, base in zip(self.parts, self.ids, self.base, strict=False):
            out.append(part)
            extra = classes.get(element_id)
            out.append(f"{base} {extra}" if extra else base)
        out.append(self.parts[-1])
        text = "".join(out)
        if css:
            text = _insert_style(text, css)
        return text


def _insert_style(svg: str, css: str) -> str:
    """Put a <style> element right after the opening <svg ...> tag."""
    start = svg.find("<svg")
    end = svg.find(">", start) + 1
    return svg[:end] + f"\n<style>{css}</style>" + svg[end:]


def step_css(theme: Theme, scope: str = "") -> str:
    """The stylesheet that gives replay classes their look; ``scope`` prefixes selectors."""
    step = theme.step
    s = f"{scope} " if scope else ""
    # Nodes still to come keep their text and outline at full contrast (a faded node is
    # invisible on a projector): a dashed outline marks them, and only their fill fades.
    shapes = ("path", "polygon", "ellipse")
    pending = ",".join(f"{s}.gv_pending>{shape}" for shape in shapes)
    notrun = ",".join(f"{s}.gv_notrun>{shape}" for shape in shapes)
    return (
        f"{pending}{{stroke-dasharray:6 3;fill-opacity:{step.pending_opacity}}}"
        f"{notrun}{{stroke-dasharray:2 3;fill-opacity:{step.pending_opacity / 2}}}"
        f"{s}.gv_active>path,{s}.gv_active>polygon{{stroke:{step.active_border};"
        f"stroke-width:{step.active_width}px}}"
        f"{s}.gv_flowing>path{{stroke:{step.active_border};stroke-width:2.2px}}"
        f"{s}.gv_flowing>polygon{{stroke:{step.active_border};fill:{step.active_border}}}"
        f"{s}.gv_hidegrad .gv_grad{{visibility:hidden}}"
        f"{s}.gv_filled>polygon{{stroke:{step.active_border}}}"
        f"{s}.gv_nonfinite>path,{s}.gv_nonfinite>polygon{{stroke:{step.nonfinite_border};"
        f"stroke-width:{step.active_width}px;stroke-dasharray:7 3}}"
    )
