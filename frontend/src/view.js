// One view of the replay: its SVG, the elements by id, the classes each has at the step
// shown, and for big graphs the part of it that is in the DOM (Virtual).
//
// Stepping only toggles CSS classes on SVG elements found by id: no layout and no kernel round
// trip per step. A ClassIndex says which elements change between two steps, so a step touches
// only those (a step costs the same at 300 and at 10,000 nodes).

import { REPLAY_CLASSES, ClassIndex } from "./schedule.js";
import { parseSvg } from "./dom.js";
import { Geometry, matrixTo, shapeBounds } from "./geometry.js";
import { placement } from "./camera.js";

// One view's SVG, parsed on first use, with its elements indexed by id within this stepper
// only (two steppers of the same recording on one page share ids, never lookups).
export class View {
  // `split` (lazy loading, where shipped) splits a big view's text, or returns null.
  constructor(text, name, schedule, born, split = null) {
    this.name = name;
    this.classes = new ClassIndex(schedule, born);
    this.shownStep = null;
    this.lazy = split ? split(text) : null; // a big view: nodes and edges parsed when first needed
    this.svg = this.lazy ? this.lazy.svg : parseSvg(text);
    this.byId = new Map();
    for (const e of this.svg.querySelectorAll("[id]")) {
      this.byId.set(e.id, e);
      e.classList.remove(...REPLAY_CLASSES); // shipped styled for one step; we own them now
    }
    this.current = new Map();
    const vb = (this.svg.getAttribute("viewBox") || "0 0 100 100").split(/[\s,]+/).map(Number);
    this.home = { x: vb[0], y: vb[1], w: vb[2], h: vb[3] };
    this.size = [this.svg.getAttribute("width"), this.svg.getAttribute("height")];
    this.box = { ...this.home };
    cameraSurface(this);
    this.geometry = new Geometry(this.svg);
    this.virtual = this.lazy ? this.lazy.attach(this) : Virtual.over(this); // attach: byId, geometry too
    this.geometry.partial = Boolean(this.lazy || this.virtual); // not every node is in the tree
  }

  setClass(id, want) {
    const el = this.byId.peek ? this.byId.peek(id) : this.byId.get(id);
    if (el === undefined) return; // not in this view (null: in it, not parsed yet)
    const had = this.current.get(id) || "";
    if (had === want) return;
    if (el && had) el.classList.remove(...had.split(" "));
    if (el && want) el.classList.add(...want.split(" "));
    this.current.set(id, want);
  }

  // The classes of step `index`: only what changed since the step shown last.
  apply(index) {
    const c = this.classes;
    const ids = this.shownStep === null ? null : c.changed(this.shownStep, index);
    for (const id of ids || c.info.keys()) this.setClass(id, c.classOf(id, index));
    this.shownStep = index;
  }

  showBox(size) {
    placeSvg(this, size);
  }
}

// The camera as a CSS transform.
// The camera used to set the SVG's viewBox: Chromium then lays out and repaints every element
// of the SVG (580 ms a frame at 3,000 nodes, measured). Instead the SVG keeps its viewBox (the
// whole graph, one SVG unit = one CSS px) and the camera moves it with a CSS transform: only
// the visible part is rastered again (17 ms a frame). `will-change: transform` was measured
// too and is slower (50 ms: a layer as big as the whole graph).
function cameraSurface(view) {
  const h = view.home;
  view.svg.setAttribute("viewBox", `${h.x} ${h.y} ${h.w} ${h.h}`);
  view.svg.setAttribute("width", String(h.w));
  view.svg.setAttribute("height", String(h.h));
  view.svg.removeAttribute("preserveAspectRatio");
}

// The transform that shows view.box in a canvas of `size` (CSS px), centred as "meet" did.
function placeSvg(view, size) {
  if (view.virtual) view.virtual.show(view.box);
  const { s, tx, ty } = (view.placed = placement(view.box, view.home, size));
  view.svg.style.transform = `translate(${tx}px, ${ty}px) scale(${s})`;
}

// Big graphs: only the nodes and edges near the camera are in the DOM.
// Chromium restyles, lays out and repaints every element of an SVG when any of them changes
// (traced at 3,000 nodes: 147 ms of paint, 21 ms style, 21 ms layout, 31 ms layerize a
// step), whatever is on screen. Above VIRTUAL_ABOVE nodes and edges, the ones outside a
// region around the camera wait outside the document, each behind a placeholder comment that
// keeps its place (the drawing order). They keep their ids, classes and geometry: View.byId
// holds them, a step still sets their classes, and gvState() (the tests' API) reads them.
export const VIRTUAL_ABOVE = 1500;
const VIRTUAL_MARGIN = 0.75; // the region around the camera, in screens on each side

export class Virtual {
  static over(view) {
    const graph = view.svg.querySelector(":scope > g");
    if (!graph) return null;
    // the combined view draws its two sides as graphs of their own, each in a moved group:
    // their nodes and edges are the members there, not the side as one block
    const groups = [graph, ...graph.querySelectorAll(":scope > g[transform] > g.graph")];
    const members = groups.flatMap((group) =>
      [...group.children]
        .filter((e) => e.localName === "g" && !e.classList.contains("cluster") && !e.hasAttribute("transform"))
        .map((el) => ({ el, group })),
    );
    if (members.length <= VIRTUAL_ABOVE) return null;
    return new Virtual(view, members);
  }

  constructor(view, members) {
    view.geometry.index(); // names and neighbours, while every node is still in the tree
    view.nodes = members.map((m) => m.el).filter((e) => e.classList.contains("node"));
    const matrices = new Map();
    this.items = members.map(({ el, group }) => {
      if (!matrices.has(group)) matrices.set(group, matrixTo(group, view.svg));
      const m = matrices.get(group);
      const r = shapeBounds(el);
      const p = m.transformPoint(new DOMPoint(r.x, r.y));
      const q = m.transformPoint(new DOMPoint(r.x + r.width, r.y + r.height));
      const box = { x: Math.min(p.x, q.x), y: Math.min(p.y, q.y), w: Math.abs(q.x - p.x), h: Math.abs(q.y - p.y) };
      view.geometry.boxes.set(el, box);
      return { el, box, ph: null, on: true };
    });
    this.region = null;
    this.attached = this.items.length;
  }

  // Keep in the DOM what is within VIRTUAL_MARGIN screens of `box`; nothing moves while the
  // camera stays inside the region chosen last.
  show(box) {
    const r = this.region;
    const inside = r && box.x >= r.x && box.y >= r.y && box.x + box.w <= r.x + r.w && box.y + box.h <= r.y + r.h;
    const zoomedIn = r && r.w > box.w * (1 + 2 * VIRTUAL_MARGIN) * 2; // the region is far too big now
    if (inside && !zoomedIn) return;
    const mx = box.w * VIRTUAL_MARGIN;
    const my = box.h * VIRTUAL_MARGIN;
    this.region = { x: box.x - mx, y: box.y - my, w: box.w + 2 * mx, h: box.h + 2 * my };
    this.fill(this.region);
  }

  fill(region) {
    let attached = 0;
    for (const item of this.items) {
      const b = item.box;
      const near =
        !region ||
        (b.x <= region.x + region.w && b.x + b.w >= region.x && b.y <= region.y + region.h && b.y + b.h >= region.y);
      if (near && !item.on) {
        item.ph.replaceWith(item.el);
        item.on = true;
      } else if (!near && item.on) {
        if (!item.ph) item.ph = document.createComment("");
        item.el.replaceWith(item.ph);
        item.on = false;
      }
      if (item.on) attached++;
    }
    this.attached = attached;
  }

  // Everything in the tree (a download); `restore` puts the camera's region back.
  all() {
    this.fill(null);
  }

  restore() {
    const r = this.region;
    if (r) this.fill(r);
  }
}
