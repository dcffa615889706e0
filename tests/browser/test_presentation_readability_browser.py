"""Presentation mode read from the back of a lecture hall, measured in Chromium: node text,
caption and controls large enough, the graph filling the stage, nodes still to come as
legible as the rest, the combined view's links ending at their nodes, and forward frames
framed on what is drawn so far. Sizes come from the rendered boxes, colours from the
computed styles, and presentation mode is entered with the F key, as a lecturer does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import gradviz
from gradviz.model.recording import Recording
from gradviz.teaching.lessons import lesson
from tests.support.browser import chromium, open_local
from tests.support.person import NEXT_FRAMES, choose, click, focus_on, has_class

pytestmark = [pytest.mark.browser, pytest.mark.needs_dot]

HD = (1920, 1080)
SMALL = (1280, 720)

# Every node text on screen (the legend aside): its height in CSS px, the computed font size
# times the SVG's current scale (its drawn width over its width in SVG units).
NODE_TEXT_PX = """root => {
  const svg = root.querySelector('.gv-canvas > svg');
  const c = root.querySelector('.gv-canvas').getBoundingClientRect();
  const scale = svg.getBoundingClientRect().width / svg.width.baseVal.value;
  const out = [];
  for (const t of svg.querySelectorAll('g.node:not(.gv_legend_item) text')) {
    if (getComputedStyle(t).visibility === 'hidden' || t.closest('.gv_future')) continue;
    const r = t.getBoundingClientRect();
    const x = (r.left + r.right) / 2, y = (r.top + r.bottom) / 2;
    if (x < c.left || x > c.right || y < c.top || y > c.bottom) continue;
    out.push(parseFloat(getComputedStyle(t).fontSize) * scale);
  }
  return out;
}"""

# The font sizes of the caption and of every visible control of the step bar.
CHROME_PX = """root => {
  const px = (e) => parseFloat(getComputedStyle(e).fontSize);
  const controls = [...root.querySelectorAll('.gv-toolbar button, .gv-toolbar select, .gv-counter')]
    .filter((e) => e.getClientRects().length);
  return { caption: px(root.querySelector('.gv-caption')), controls: controls.map(px) };
}"""

# How much of the stage the drawn graph covers, as fractions of its width and height.
GRAPH_COVER = """root => {
  const c = root.querySelector('.gv-canvas').getBoundingClientRect();
  const g = root.querySelector('.gv-canvas > svg > g').getBoundingClientRect();
  const w = Math.min(c.right, g.right) - Math.max(c.left, g.left);
  const h = Math.min(c.bottom, g.bottom) - Math.max(c.top, g.top);
  return [Math.max(w, 0) / c.width, Math.max(h, 0) / c.height];
}"""


def _ten_ops() -> Recording:
    built = lesson("05-ten-ops").build()
    return gradviz.record(*built.roots, names=built.names)


def _watched_ten_ops() -> Recording:
    with gradviz.watch() as watching:
        built = lesson("05-ten-ops").build()
    return built.record(watching)


def _present(page: Any, root: Any) -> None:
    page.keyboard.press("f")
    assert has_class(page, root, "gv-present")
    page.evaluate(NEXT_FRAMES)  # the stage's new size is seen (and the view refit) by then


@pytest.mark.parametrize(("screen", "least"), [(HD, 20.0), (SMALL, 16.0)], ids=["1080p", "720p"])
def test_presentation_text_is_readable_from_the_back(
    tmp_path: Path, screen: tuple[int, int], least: float
) -> None:
    recording = _ten_ops()
    page_file = recording.save(tmp_path / "replay.html")
    with chromium(tmp_path / "profile") as context:
        page, _, errors = open_local(context, page_file)
        page.set_viewport_size({"width": screen[0], "height": screen[1]})
        root = page.wait_for_selector(".gv-stepper")
        _present(page, root)
        for step in range(len(recording.steps) + 1):
            assert root.get_attribute("data-step") == str(step)
            sizes = page.evaluate(NODE_TEXT_PX, root)
            assert sizes, f"step {step}: no node text on screen"
            assert min(sizes) >= least - 0.05, (step, min(sizes))
            chrome = page.evaluate(CHROME_PX, root)
            assert chrome["caption"] >= 28, chrome
            assert chrome["controls"] and min(chrome["controls"]) >= 18, chrome
            cover = page.evaluate(GRAPH_COVER, root)
            assert max(cover) >= 0.8, (step, cover)
            page.keyboard.press("PageDown")
        page.screenshot(path=str(tmp_path / "present.png"))
        # the resize that refits never brings the text below 12 px: it follows instead (Fit is
        # hidden while presenting, with the rest of the tool bar: no one can press it there)
        assert not root.query_selector(".gv-fit").is_visible()
        page.set_viewport_size({"width": 1024, "height": 640})
        page.wait_for_function(
            "r => Math.abs(r.querySelector('.gv-canvas').getBoundingClientRect().width - 1000) < 1",
            arg=root,
        )
        page.evaluate(NEXT_FRAMES)  # the stage's resize is seen before the next frame's paint
        sizes = page.evaluate(NODE_TEXT_PX, root)
        assert sizes and min(sizes) >= 16 - 0.05, sizes
        assert not errors, errors


def _srgb(channel: float) -> float:
    c = channel / 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _luminance(rgb: tuple[float, float, float]) -> float:
    r, g, b = (_srgb(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    """The WCAG 2 contrast ratio of two opaque sRGB colours (0-255 channels)."""
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def over(top: tuple[float, float, float, float], under: tuple[float, float, float]) -> tuple:
    """``top`` (r, g, b, alpha) composited over an opaque colour."""
    r, g, b, alpha = top
    return tuple(alpha * c + (1 - alpha) * u for c, u in zip((r, g, b), under, strict=True))


# Each pending node's colours as drawn: text fill, shape fill and outline, each with the alpha
# its own fill/stroke opacity and every ancestor's opacity give it; the outline's dashes.
PENDING_COLOURS = """root => {
  const rgba = (text) => {
    const m = text.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return null;
    const p = m[1].split(',').map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const opacity = (el) => {
    let a = 1;
    for (let e = el; e && e.localName !== 'svg'; e = e.parentElement) {
      a *= Number(getComputedStyle(e).opacity);
    }
    return a;
  };
  const paint = (el, what) => {
    const s = getComputedStyle(el);
    const c = rgba(s[what]);
    if (!c) return null;
    c[3] *= Number(s[what + 'Opacity']) * opacity(el);
    return c;
  };
  const background = rgba(getComputedStyle(root).backgroundColor);
  const nodes = (cls) => [...root.querySelectorAll(`.gv-canvas svg g.node.${cls}`)];
  const shape = (g) => g.querySelector(':scope > path, :scope > polygon, :scope > ellipse');
  return {
    background,
    pending: nodes('gv_pending').map((g) => ({
      id: g.id,
      text: paint(g.querySelector('text'), 'fill'),
      fill: paint(shape(g), 'fill'),
      stroke: paint(shape(g), 'stroke'),
      dash: getComputedStyle(shape(g)).strokeDasharray,
    })),
    done: nodes('gv_done').map((g) => getComputedStyle(shape(g)).strokeDasharray),
  };
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("presenting", [False, True], ids=["page", "presenting"])
def test_pending_nodes_keep_contrast_and_are_told_apart_by_dashes(
    tmp_path: Path, scheme: str, presenting: bool
) -> None:
    recording = _ten_ops()
    page_file = recording.save(tmp_path / "replay.html")
    with chromium(tmp_path / "profile") as context:
        page, _, errors = open_local(context, page_file)
        page.emulate_media(color_scheme=scheme)
        page.reload(wait_until="load")  # the stepper takes the scheme when it mounts
        page.set_viewport_size({"width": HD[0], "height": HD[1]})
        root = page.wait_for_selector(".gv-stepper")
        assert ("gv-dark" in (root.get_attribute("class") or "")) == (scheme == "dark")
        if presenting:
            _present(page, root)
        page.keyboard.press("PageDown")
        page.keyboard.press("PageDown")
        assert root.get_attribute("data-step") == "2"
        seen = page.evaluate(PENDING_COLOURS, root)
        background = tuple(seen["background"][:3])
        assert seen["pending"] and seen["done"], seen
        for node in seen["pending"]:
            behind = over(node["fill"], background)  # the node's own fill, as drawn
            assert contrast(over(node["text"], behind), behind) >= 4.5, node
            assert contrast(over(node["stroke"], background), background) >= 4.5, node
            assert node["dash"] not in ("none", ""), node  # a dashed outline says "to come"
        assert all(dash == "none" for dash in seen["done"]), seen["done"]
        assert not errors, errors


# Each forward-to-backward link in the SVG's own coordinates made screen px: where it starts,
# where it ends (its arrow's tip), its end nodes' boxes; and whether anything filled that is
# drawn above the link covers the point just before its end (outside both end nodes).
LINK_ENDS = """root => {
  const svg = root.querySelector('.gv-canvas > svg');
  const r = svg.getBoundingClientRect();
  const s = r.width / svg.width.baseVal.value;
  const screen = (p) => [r.left + p.x * s, r.top + p.y * s];
  const inSvg = (el, x, y) => new DOMPoint(x, y).matrixTransform(el.getCTM());
  const prefix = svg.querySelector('g.graph').id + '_';
  const titled = new Map([...svg.querySelectorAll('g.node > title')]
    .map((t) => [t.textContent, t.parentElement]));
  const node = (name) => titled.get(name) || svg.querySelector(`g.node[id="${prefix}${name}"]`);
  const box = (el) => {
    const b = el.getBoundingClientRect();
    return [b.left, b.top, b.right, b.bottom];
  };
  const all = [...svg.querySelectorAll('*')];
  const out = [];
  for (const g of svg.querySelectorAll('g.edge.gv_link')) {
    const [a, b] = g.querySelector('title').textContent.split('->');
    const path = g.querySelector('path');
    const len = path.getTotalLength();
    const first = path.getPointAtLength(0);
    const tipAt = g.querySelector('polygon');
    const last = tipAt ? tipAt.points.getItem(0) : path.getPointAtLength(len);
    const near = path.getPointAtLength(Math.max(len - 12, 0));
    const at = inSvg(path, near.x, near.y);
    const ends = [node(a), node(b)];
    const covered = all.slice(all.indexOf(g) + 1).filter((e) =>
      e instanceof SVGGeometryElement && !ends.some((n) => n && n.contains(e)) && !g.contains(e) &&
      getComputedStyle(e).fill !== 'none' && Number(getComputedStyle(e).fillOpacity) > 0 &&
      e.isPointInFill(at.matrixTransform(e.getCTM().inverse())));
    out.push({
      id: g.id,
      start: screen(inSvg(path, first.x, first.y)),
      end: screen(inSvg(tipAt || path, last.x, last.y)),
      a: ends[0] ? box(ends[0]) : null,
      b: ends[1] ? box(ends[1]) : null,
      covered: covered.map((e) => (e.closest('g[id]') || e).id + ' ' + e.localName),
    });
  }
  return out;
}"""

NODES_INSIDE = """root => {
  const c = root.querySelector('.gv-canvas').getBoundingClientRect();
  return [...root.querySelectorAll('.gv-canvas svg g.node')].filter((g) => !g.closest('.gv_future'))
    .map((g) => {
      const b = g.getBoundingClientRect();
      const inside = b.left >= c.left - 1 && b.top >= c.top - 1 &&
        b.right <= c.right + 1 && b.bottom <= c.bottom + 1;
      return [g.id, inside];
    });
}"""


def _within(point: list[float], box: list[float], slack: float = 2.0) -> bool:
    x, y = point
    return box[0] - slack <= x <= box[2] + slack and box[1] - slack <= y <= box[3] + slack


def test_combined_view_links_end_at_their_nodes_and_nothing_is_cut(tmp_path: Path) -> None:
    recording = _watched_ten_ops()
    page_file = recording.save(tmp_path / "replay.html", view="combined")
    with chromium(tmp_path / "profile") as context:
        page, _, errors = open_local(context, page_file)
        page.set_viewport_size({"width": SMALL[0], "height": SMALL[1]})
        root = page.wait_for_selector(".gv-stepper")
        choose(page, root.query_selector(".gv-view"), "combined")
        focus_on(page, root, "its stage")  # the keys go to the stepper, not the list
        page.keyboard.press("End")
        click(page, root.query_selector(".gv-fit"))
        links = page.evaluate(LINK_ENDS, root)
        assert len(links) >= 5, links
        for link in links:
            assert link["a"] and link["b"], link
            assert _within(link["start"], link["a"]), link
            assert _within(link["end"], link["b"]), link
            assert not link["covered"], link  # drawn over: the link would end in blank space
        inside = page.evaluate(NODES_INSIDE, root)
        assert inside and all(ok for _, ok in inside), [n for n, ok in inside if not ok]
        page.screenshot(path=str(tmp_path / "combined.png"))
        assert not errors, errors


def _union(boxes: list[list[float]]) -> list[float]:
    xs0, ys0, xs1, ys1 = zip(*boxes, strict=True)
    return [min(xs0), min(ys0), max(xs1), max(ys1)]


def _fits(box: list[float], stage: list[float]) -> bool:
    return box[2] - box[0] <= stage[2] - stage[0] and box[3] - box[1] <= stage[3] - stage[1]


def _inside(box: list[float], stage: list[float]) -> bool:
    return _within(box[:2], stage, 1) and _within(box[2:], stage, 1)


# The box around what a forward frame draws (nodes and edges made so far, the legend aside),
# the stage's box, and the boxes of the elements the op just made.
DRAWN = """root => {
  const c = root.querySelector('.gv-canvas').getBoundingClientRect();
  const shown = [...root.querySelectorAll('.gv-canvas svg g.node, .gv-canvas svg g.edge')]
    .filter((g) => !g.classList.contains('gv_legend_item') && !g.closest('.gv_future') &&
    getComputedStyle(g).visibility !== 'hidden');
  const rects = shown.map((g) => g.getBoundingClientRect()).filter((b) => b.width || b.height);
  const born = [...root.querySelectorAll('.gv-canvas svg g.node.gv_born')].map((g) => {
    const b = g.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; });
  return {
    stage: [c.left, c.top, c.right, c.bottom],
    drawn: rects.length ? [
      Math.min(...rects.map((b) => b.left)), Math.min(...rects.map((b) => b.top)),
      Math.max(...rects.map((b) => b.right)), Math.max(...rects.map((b) => b.bottom)),
    ] : null,
    born,
  };
}"""


@pytest.mark.parametrize("view", ["backward", "combined"])
@pytest.mark.parametrize("screen", [HD, SMALL], ids=["1080p", "720p"])
def test_forward_frames_are_framed_on_what_is_drawn_so_far(
    tmp_path: Path, view: str, screen: tuple[int, int]
) -> None:
    recording = _watched_ten_ops()
    frames = len(recording.forward_ops)
    page_file = recording.save(tmp_path / "replay.html", view=view)
    with chromium(tmp_path / "profile") as context:
        page, _, errors = open_local(context, page_file)
        page.set_viewport_size({"width": screen[0], "height": screen[1]})
        root = page.wait_for_selector(".gv-stepper")
        if root.get_attribute("data-view") != view:
            choose(page, root.query_selector(".gv-view"), view)
            focus_on(page, root, "its stage")  # the keys go to the stepper, not the list
        _present(page, root)
        page.keyboard.press("Home")
        for frame in range(-frames, 0):
            assert root.get_attribute("data-step") == str(frame)
            seen = page.evaluate(DRAWN, root)
            stage, drawn = seen["stage"], seen["drawn"]
            if drawn is None:  # the op made nothing this view draws (a factory, backward view)
                page.keyboard.press("PageDown")
                continue
            # what the op just made is on the stage: all of it where it fits, else a part
            born = seen["born"]
            on_stage = [_inside(made, stage) for made in born]
            if born and _fits(_union(born), stage):
                assert all(on_stage), (frame, born, stage)
            elif born:
                assert any(on_stage), (frame, born, stage)
            if _fits(drawn, stage):  # centred on what exists so far
                for axis in (0, 1):
                    middle = (drawn[axis] + drawn[axis + 2]) / 2
                    centre = (stage[axis] + stage[axis + 2]) / 2
                    span = stage[axis + 2] - stage[axis]
                    assert abs(middle - centre) <= 0.02 * span, (frame, axis, drawn, stage)
            if frame == -frames:
                page.screenshot(path=str(tmp_path / "first-frame.png"))
            page.keyboard.press("PageDown")
        assert not errors, errors
