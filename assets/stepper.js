// gradviz stepper: replays a recorded backward pass on an SVG laid out once.
//
// Stepping only toggles CSS classes on SVG elements found by id (DESIGN §7): no layout and
// no kernel round trip per step. The same module serves the notebook widget (anywidget's
// `render({model, el})`) and the standalone HTML page (`mountStandalone()`, which feeds it
// a small local model). Every string from the recording reaches the page as text
// (textContent), never as markup; the SVGs are parsed as XML and stripped of anything active.
//
// Steps: 0 is the seed, 1..N the backward steps. A recording made under gradviz.watch() also
// has forward frames -F..-1 before the seed (data.first = -F), one per forward op: elements
// appear (schedule.born[view]: the step an element is made at) as the code builds the graph.
//
// Module views (data.modules, under gradviz.watch(model)): "modules" draws one cluster per
// module; "collapsed-D" draws every module deeper than D as one box (schedule.boxes: the steps
// at which a node inside it runs). Clicking a box expands it: the stepper switches to the
// next depth's layout (or "modules"), where that module is a cluster, at the same step, and
// zooms to it; the depth control goes back.
//
// Big graphs (features kept in their own classes below, outside mount's closure):
// - ClassIndex: per view, which elements change between two steps, so a step touches only
//   those (a step costs the same at 300 and at 10,000 nodes);
// - Camera: each step pans (and zooms where needed) so the active node and its neighbours
//   are on screen with text at least MIN_TEXT_PX tall; panning or zooming by hand pauses it,
//   the Follow button resumes it;
// - Minimap: the whole view as an image, the visible part framed; click it to go there;
// - Search: finds a node by its type, module or tensor names, highlights the matches and
//   jumps to them (Enter: the next one);
// - ModuleNav: step over / out of / back over a module (data.nav: each node's module chain).
// Views not shipped yet (the notebook lays them out when first chosen) are asked for with
// model.send({type: "view", name}); the page ships every view it offers.

const REPLAY_CLASSES = [
  "gv_done",
  "gv_active",
  "gv_pending",
  "gv_notrun",
  "gv_hidegrad",
  "gv_flowing",
  "gv_future",
  "gv_born",
  "gv_partial",
  "gv_nonfinite",
];
const SPEEDS = [0.5, 1, 2, 4];
const STEP_MS = 1000;
const SCOPE = "#GVROOT";
const MIN_TEXT_PX = 12; // the camera never shows node text smaller than this
const NODE_FONT = 11; // Graphviz points (SVG user units) of node labels, as gradviz draws them
const MAX_SCALE = 1.6; // and never zooms in further than this (CSS px per SVG unit)
const MAX_MATCHES = 400; // highlighted search matches at most
let mounted = 0;

// The class rules; gradviz.replay.classes_at is the Python reference and a test compares them.
export function nodeClass(ran, index) {
  if (index < 0) return ""; // a forward frame: backward has not started
  if (ran === null || ran === undefined) return "gv_notrun";
  if (ran < index) return "gv_done";
  return ran === index ? "gv_active" : "gv_pending";
}

// A collapsed module from its members' (sorted) steps, as gradviz.replay.box_class.
export function boxClass(steps, index) {
  if (index < 0) return "";
  if (!steps.length) return "gv_notrun";
  if (index < steps[0]) return "gv_pending";
  if (index > steps[steps.length - 1]) return "gv_done";
  return steps.includes(index) ? "gv_active" : "gv_partial";
}

export function flowClass(at, index) {
  if (at > index) return "gv_hidegrad";
  return at === index ? "gv_flowing" : "";
}

export function bornClass(at, index) {
  if (index < at) return "gv_future";
  return at === index ? "gv_born" : "";
}

// Every scheduled element's classes at `index` in `view`, "" where it has none; several
// classes are joined by a space, the backward one first (as gradviz.replay.classes_at).
function elementClasses(schedule, index, view) {
  const out = new Map();
  for (const [id, ran] of Object.entries(schedule.nodes)) out.set(id, nodeClass(ran, index));
  for (const [id, steps] of Object.entries(schedule.boxes || {})) out.set(id, boxClass(steps, index));
  for (const group of ["edges", "links"]) {
    for (const [id, at] of Object.entries(schedule[group])) out.set(id, flowClass(at, index));
  }
  const born = (schedule.born && schedule.born[view]) || {};
  for (const [id, at] of Object.entries(born)) {
    const had = out.get(id) || "";
    const extra = bornClass(at, index);
    out.set(id, had && extra ? `${had} ${extra}` : had || extra);
  }
  // where NaN or Inf first appeared, marked from that step on (schedule.nonfinite)
  for (const [id, at] of Object.entries(schedule.nonfinite || {})) {
    const had = out.get(id) || "";
    if (index >= at) out.set(id, had ? `${had} gv_nonfinite` : "gv_nonfinite");
  }
  return out;
}

export function classesAt(schedule, index, view = "backward") {
  const out = {};
  for (const [id, cls] of elementClasses(schedule, index, view)) if (cls) out[id] = cls;
  return out;
}

// Parse an SVG as XML (scripts never run) and drop anything that could act.
function parseSvg(text) {
  const doc = new DOMParser().parseFromString(text, "image/svg+xml");
  const svg = doc.documentElement;
  if (!svg || svg.nodeName !== "svg") throw new Error("gradviz: the replay's SVG did not parse");
  sanitize(svg);
  return document.adoptNode(svg); // moved, not copied (#14)
}

// Remove what could act from a parsed SVG (elements that run or embed, on* handlers,
// javascript: links).
function sanitize(svg) {
  for (const bad of svg.querySelectorAll("script, foreignObject, iframe")) bad.remove();
  for (const node of svg.querySelectorAll("*")) {
    for (const attr of node.getAttributeNames()) {
      const name = attr.toLowerCase(); // the value is read only where it could matter (#14)
      if (name.startsWith("on")) node.removeAttribute(attr);
      else if (name.endsWith("href") && node.getAttribute(attr).trim().toLowerCase().startsWith("javascript:")) {
        node.removeAttribute(attr);
      }
    }
  }
}

function button(label, title, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "gv-btn";
  b.textContent = label;
  b.title = title;
  b.setAttribute("aria-label", title);
  b.addEventListener("click", onClick);
  return b;
}

function element(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

function pageIsDark() {
  const body = document.body;
  const light = body ? body.getAttribute("data-jp-theme-light") : null;
  if (light !== null) return light === "false";
  return !!(window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches);
}

// One view's SVG, parsed on first use, with its elements indexed by id within this stepper
// only (two steppers of the same recording on one page share ids, never lookups).
class View {
  constructor(text, name, schedule, born) {
    this.name = name;
    this.classes = new ClassIndex(schedule, born);
    this.shownStep = null;
    this.lazy = splitLazily ? splitLazily(text) : null; // a big view: nodes and edges parsed when first needed
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

// Which elements of one view change between two steps: every scheduled time sorted, so a
// step from a to b restyles only the elements with a time in [a, b] (and the module boxes).
// Crossing into the backward pass (step -1 to 0) restyles everything: nodes get classes.
class ClassIndex {
  constructor(schedule, born) {
    this.info = new Map();
    const times = [];
    const entry = (id) => {
      let e = this.info.get(id);
      if (!e) this.info.set(id, (e = {}));
      return e;
    };
    const timed = (id, at) => {
      if (at !== null && at !== undefined) times.push([at, id]);
    };
    for (const [id, ran] of Object.entries(schedule.nodes)) {
      entry(id).ran = ran === undefined ? null : ran;
      timed(id, ran);
    }
    this.boxes = Object.keys(schedule.boxes || {});
    for (const id of this.boxes) entry(id).steps = schedule.boxes[id];
    for (const group of ["edges", "links"]) {
      for (const [id, at] of Object.entries(schedule[group])) {
        entry(id).at = at;
        timed(id, at);
      }
    }
    for (const [id, at] of Object.entries(born || {})) {
      entry(id).born = at;
      timed(id, at);
    }
    for (const [id, at] of Object.entries(schedule.nonfinite || {})) {
      entry(id).nf = at;
      timed(id, at);
    }
    times.sort((a, b) => a[0] - b[0]);
    this.times = times.map((t) => t[0]);
    this.ids = times.map((t) => t[1]);
  }

  classOf(id, index) {
    const e = this.info.get(id);
    if (!e) return "";
    let cls = "";
    if (e.ran !== undefined) cls = nodeClass(e.ran, index);
    if (e.steps) cls = boxClass(e.steps, index);
    if (e.at !== undefined) cls = flowClass(e.at, index);
    if (e.born !== undefined) {
      const extra = bornClass(e.born, index);
      cls = cls && extra ? `${cls} ${extra}` : cls || extra;
    }
    if (e.nf !== undefined && index >= e.nf) cls = cls ? `${cls} gv_nonfinite` : "gv_nonfinite";
    return cls;
  }

  // The ids whose class may differ between steps `a` and `b`; null: all of them.
  changed(a, b) {
    const lo = Math.min(a, b);
    const hi = Math.max(a, b);
    if (lo < 0 && hi >= 0) return null;
    const out = new Set(this.boxes);
    let i = lowerBound(this.times, lo);
    while (i < this.times.length && this.times[i] <= hi) out.add(this.ids[i++]);
    return out;
  }
}

function lowerBound(sorted, value) {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// The transform from an element's user space to its <svg>'s viewBox space, from the
// transform attributes alone (no layout needed; the layout never changes).
function matrixTo(el, svg) {
  let m = new DOMMatrix();
  for (let node = el; node && node !== svg; node = node.parentNode) {
    const list = node.transform && node.transform.baseVal;
    const t = list && list.numberOfItems ? list.consolidate() : null;
    if (t) {
      const k = t.matrix;
      m = new DOMMatrix([k.a, k.b, k.c, k.d, k.e, k.f]).multiply(m);
    }
  }
  return m;
}

// Geometry of one view's nodes: boxes in viewBox units (cached: positions never change),
// DOT names from <title>, and each node's neighbours from the edges' titles ("a->b").
class Geometry {
  constructor(svg) {
    this.svg = svg;
    this.boxes = new Map();
    this.byName = null;
    this.neighbours = null;
  }

  // From the shapes' own attributes, not getBBox(): that would force the browser to lay out
  // the whole SVG again after every step's class change (240 ms a step at 3,000 nodes).
  box(el) {
    let b = this.boxes.get(el);
    if (b) return b;
    const r = shapeBounds(el);
    const m = matrixTo(el, this.svg);
    const p = m.transformPoint(new DOMPoint(r.x, r.y));
    const q = m.transformPoint(new DOMPoint(r.x + r.width, r.y + r.height));
    b = { x: Math.min(p.x, q.x), y: Math.min(p.y, q.y), w: Math.abs(q.x - p.x), h: Math.abs(q.y - p.y) };
    this.boxes.set(el, b);
    return b;
  }

  index() {
    if (this.byName) return;
    this.byName = new Map();
    this.neighbours = new Map();
    for (const g of this.svg.querySelectorAll("g.node")) {
      const name = dotName(g, this.svg);
      if (name) this.byName.set(name, g);
    }
    const link = (a, b) => {
      if (!this.neighbours.has(a)) this.neighbours.set(a, []);
      this.neighbours.get(a).push(b);
    };
    for (const g of this.svg.querySelectorAll("g.edge")) {
      const ends = edgeEnds(g, this.svg);
      if (ends.length !== 2) continue;
      const [a, b] = ends.map((e) => e.split(":")[0]);
      link(a, b);
      link(b, a);
    }
  }

  // The element and its neighbours' elements (by DOT name, via the <title>).
  around(el) {
    this.index();
    const name = dotName(el, this.svg);
    const names = name ? this.neighbours.get(name) || [] : [];
    return names.map((n) => this.byName.get(n)).filter(Boolean);
  }
}

// An element's DOT name: its <title>; a node the page ships without one (its id is the graph's
// id, "_" and the name) gets it from its id.
function dotName(el, svg) {
  const title = el.querySelector(":scope > title");
  if (title) return title.textContent;
  const graph = svg.querySelector("g.graph");
  const prefix = graph ? `${graph.id}_` : null;
  return prefix && el.classList.contains("node") && el.id.startsWith(prefix) ? el.id.slice(prefix.length) : null;
}

// An edge's ends ("a->b" in its <title>); a forward edge the page ships without one has them in
// its id: the graph's id, "_fe_", a, "_", b.
function edgeEnds(el, svg) {
  const title = el.querySelector("title");
  if (title) return title.textContent.split("->");
  const graph = svg.querySelector("g.graph");
  const prefix = graph ? `${graph.id}_fe_` : null;
  if (!prefix || !el.id.startsWith(prefix)) return [];
  const ends = el.id.slice(prefix.length).split("_");
  return ends.length === 2 ? ends : [];
}

const NUMBERS = /-?\d*\.?\d+(?:e-?\d+)?/g;

// The bounds of an element's drawn shapes in its own user space (x, y, width, height).
function shapeBounds(el) {
  let x0 = Infinity;
  let y0 = Infinity;
  let x1 = -Infinity;
  let y1 = -Infinity;
  const add = (x, y) => {
    if (x < x0) x0 = x;
    if (x > x1) x1 = x;
    if (y < y0) y0 = y;
    if (y > y1) y1 = y;
  };
  for (const shape of el.querySelectorAll("polygon, polyline, path, ellipse, text")) {
    const tag = shape.localName;
    if (tag === "ellipse") {
      const cx = +shape.getAttribute("cx");
      const cy = +shape.getAttribute("cy");
      add(cx - +shape.getAttribute("rx"), cy - +shape.getAttribute("ry"));
      add(cx + +shape.getAttribute("rx"), cy + +shape.getAttribute("ry"));
    } else if (tag === "text") {
      add(+shape.getAttribute("x"), +shape.getAttribute("y"));
    } else {
      const numbers = (shape.getAttribute(tag === "path" ? "d" : "points") || "").match(NUMBERS) || [];
      for (let i = 0; i + 1 < numbers.length; i += 2) add(+numbers[i], +numbers[i + 1]);
    }
  }
  if (x0 === Infinity) return { x: 0, y: 0, width: 0, height: 0 };
  return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
}

function union(boxes) {
  const x0 = Math.min(...boxes.map((b) => b.x));
  const y0 = Math.min(...boxes.map((b) => b.y));
  const x1 = Math.max(...boxes.map((b) => b.x + b.w));
  const y1 = Math.max(...boxes.map((b) => b.y + b.h));
  return { x: x0, y: y0, w: x1 - x0, h: y1 - y0 };
}

// -- the camera as a CSS transform (#14) ----------------------------------------------------
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
  const b = view.box;
  const s = Math.min(size.width / b.w, size.height / b.h);
  const tx = (size.width - b.w * s) / 2 - (b.x - view.home.x) * s;
  const ty = (size.height - b.h * s) / 2 - (b.y - view.home.y) * s;
  view.placed = { s, tx, ty };
  view.svg.style.transform = `translate(${tx}px, ${ty}px) scale(${s})`;
}

// A point of the canvas (CSS px from its top left) in the view's SVG units.
function canvasToGraph(view, px, py) {
  const p = view.placed || { s: 1, tx: 0, ty: 0 };
  return [view.home.x + (px - p.tx) / p.s, view.home.y + (py - p.ty) / p.s];
}

// -- big graphs: only the nodes and edges near the camera are in the DOM (#14) ---------------
// Chromium restyles, lays out and repaints every element of an SVG when any of them changes
// (traced at 3,000 nodes: 147 ms of paint, 21 ms style, 21 ms layout, 31 ms layerize a
// step), whatever is on screen. Above VIRTUAL_ABOVE nodes and edges, the ones outside a
// region around the camera wait outside the document, each behind a placeholder comment that
// keeps its place (the drawing order). They keep their ids, classes and geometry: View.byId
// holds them, a step still sets their classes, and gvState() (the tests' API) reads them.
const VIRTUAL_ABOVE = 1500;
const VIRTUAL_MARGIN = 0.75; // the region around the camera, in screens on each side

class Virtual {
  static over(view) {
    const graph = view.svg.querySelector(":scope > g");
    if (!graph) return null;
    const members = [...graph.children].filter((e) => e.localName === "g" && !e.classList.contains("cluster"));
    if (members.length <= VIRTUAL_ABOVE) return null;
    return new Virtual(view, graph, members);
  }

  constructor(view, graph, members) {
    view.geometry.index(); // names and neighbours, while every node is still in the tree
    view.nodes = members.filter((e) => e.classList.contains("node"));
    const m = matrixTo(graph, view.svg);
    this.items = members.map((el) => {
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

// -- big graphs: parse only what the camera shows (#14) --------------------------------------
// assets/lazy.js, which big pages ship, registers how to split a view of more than VIRTUAL_ABOVE
// nodes and edges (LazySvg); without it every view is parsed whole.
let splitLazily = null;
export function lazily(split) {
  splitLazily = split;
}

// The camera: which part of the view's SVG is on screen (view.box, drawn by placeSvg). It follows the active
// node unless the user moved the view by hand; it keeps node text at least MIN_TEXT_PX tall.
class Camera {
  constructor(canvas, onMove) {
    this.canvas = canvas;
    this.onMove = onMove;
    this.following = true;
    this.view = null;
    this.size = null; // the canvas's CSS size, kept by a ResizeObserver (no layout per step)
    if (window.ResizeObserver) {
      this.observer = new ResizeObserver((entries) => {
        const r = entries[entries.length - 1].contentRect;
        if (r.width && r.height) this.size = { width: r.width, height: r.height };
        if (this.view && this.size) this.view.showBox(this.size);
      });
      this.observer.observe(canvas);
    }
  }

  rect() {
    if (!this.size) {
      const r = this.canvas.getBoundingClientRect();
      if (!r.width || !r.height) return { width: 800, height: 600 };
      this.size = { width: r.width, height: r.height };
    }
    return this.size;
  }

  // CSS px per SVG unit when `box` fills the canvas (preserveAspectRatio meet).
  scaleFor(box) {
    const r = this.rect();
    return Math.min(r.width / box.w, r.height / box.h);
  }

  // The smallest scale at which node text is readable.
  static readable() {
    return MIN_TEXT_PX / NODE_FONT;
  }

  set(box) {
    this.view.box = box;
    this.view.showBox(this.rect());
    this.onMove();
  }

  // A box of the canvas's aspect at `scale`, centred on (cx, cy).
  boxAt(cx, cy, scale) {
    const r = this.rect();
    const w = r.width / scale;
    const h = r.height / scale;
    return { x: cx - w / 2, y: cy - h / 2, w, h };
  }

  // Bring `target` (and `near`, as many as fit) on screen, readable. Stays put when they
  // already are, so stepping inside a region does not jitter.
  focus(geometry, target, near) {
    if (!this.following || !target || !this.view) return;
    const t = geometry.box(target);
    const region = union([t, ...near.map((n) => geometry.box(n))]);
    const pad = 24;
    const want = { x: region.x - pad, y: region.y - pad, w: region.w + 2 * pad, h: region.h + 2 * pad };
    const now = this.view.box;
    const scale = this.scaleFor(now);
    const readable = Camera.readable();
    const inside = (b) => b.x >= now.x && b.y >= now.y && b.x + b.w <= now.x + now.w && b.y + b.h <= now.y + now.h;
    if (scale >= readable - 1e-6 && inside(t) && inside(want)) return;
    let fit = Math.min(this.scaleFor(want), MAX_SCALE);
    if (fit < readable) fit = readable; // too wide to show whole: the active node wins
    fit = Math.max(fit, Math.min(scale, MAX_SCALE)); // never zoom out to follow
    const centre = fit > this.scaleFor(want) + 1e-6 ? t : want;
    this.set(this.boxAt(centre.x + centre.w / 2, centre.y + centre.h / 2, fit));
  }

  // On showing a view: fit it when that is readable, else start readable at its top.
  start(view) {
    this.view = view;
    if (this.scaleFor(view.home) >= Camera.readable()) return;
    const s = Camera.readable() * 1.1;
    const b = this.boxAt(view.home.x + view.home.w / 2, 0, s);
    b.y = view.home.y;
    this.set(b);
  }
}

// The overview: every node of the view as a small rectangle on a canvas (no image to load,
// nothing per node in the DOM), the visible part framed, the active node marked. Clicking it
// centres the camera there.
class Minimap {
  constructor(onJump) {
    this.el = element("div", "gv-minimap");
    this.el.title = "Overview: click to go there";
    this.img = element("canvas", "gv-minimap-img");
    this.img.setAttribute("role", "img");
    this.img.setAttribute("aria-label", "overview of the graph");
    this.frame = element("div", "gv-minimap-frame");
    this.dot = element("div", "gv-minimap-dot");
    this.el.append(this.img, this.frame, this.dot);
    this.home = null;
    this.el.addEventListener("pointerdown", (event) => {
      event.stopPropagation();
      const r = this.img.getBoundingClientRect();
      if (!this.home || !r.width) return;
      const x = this.home.x + ((event.clientX - r.left) / r.width) * this.home.w;
      const y = this.home.y + ((event.clientY - r.top) / r.height) * this.home.h;
      onJump(x, y);
    });
  }

  show(view, needed) {
    this.el.hidden = !needed;
    if (!needed) return;
    const h = (this.home = view.home);
    const aspect = h.h / h.w;
    const width = aspect > 1.5 ? Math.max(60, 180 / aspect) : 180;
    const height = Math.min(aspect * width, 240);
    this.img.style.width = `${width}px`;
    this.img.style.height = `${height}px`;
    this.img.width = Math.round(width * 2);
    this.img.height = Math.round(height * 2);
    // drawn after the first frame: a big graph's thousands of boxes wait for the page (#14)
    const token = (this.token = {});
    requestAnimationFrame(() => setTimeout(() => this.token === token && this.draw(view), 0));
  }

  draw(view) {
    const h = view.home;
    const ctx = this.img.getContext("2d");
    if (!ctx) return;
    const sx = this.img.width / h.w;
    const sy = this.img.height / h.h;
    if (view.lazy) return view.lazy.draw(ctx, h, sx, sy);
    for (const node of view.nodes || view.svg.querySelectorAll("g.node")) {
      const b = view.geometry.box(node);
      const shape = node.querySelector("polygon, path, ellipse");
      const fill = shape && shape.getAttribute("fill");
      ctx.fillStyle = fill && fill !== "none" ? fill : "#9e9e9e";
      ctx.fillRect((b.x - h.x) * sx, (b.y - h.y) * sy, Math.max(b.w * sx, 1.5), Math.max(b.h * sy, 1.5));
    }
  }

  update(box, active) {
    if (this.el.hidden || !this.home) return;
    const h = this.home;
    const w = parseFloat(this.img.style.width) || 180;
    const ht = parseFloat(this.img.style.height) || 180;
    const sx = w / h.w;
    const sy = ht / h.h;
    const clamp = (v, lo, hi) => Math.min(Math.max(v, lo), hi);
    const x0 = clamp((box.x - h.x) * sx, 0, w);
    const y0 = clamp((box.y - h.y) * sy, 0, ht);
    const x1 = clamp((box.x + box.w - h.x) * sx, 0, w);
    const y1 = clamp((box.y + box.h - h.y) * sy, 0, ht);
    Object.assign(this.frame.style, { left: `${x0}px`, top: `${y0}px`, width: `${x1 - x0}px`, height: `${y1 - y0}px` });
    this.dot.hidden = !active;
    if (active) {
      this.dot.style.left = `${(active.x + active.w / 2 - h.x) * sx - 3}px`;
      this.dot.style.top = `${(active.y + active.h / 2 - h.y) * sy - 3}px`;
    }
  }
}

// -- the classroom (#17): the stage's height, key routing, presentation mode -----------------

// The stage takes the window's height (less the toolbars), whatever the graph's own size:
// the SVG is scaled to fit ("meet"), so a small graph fills the stage instead of a corner.
function stageHeight(home) {
  const natural = home.h * (4 / 3); // Graphviz sizes in pt; CSS px are 3/4 pt
  const room = Math.max(240, (window.innerHeight || 800) - 150);
  return `${Math.round(Math.max(Math.min(room, Math.max(natural, 0.75 * room)), 180))}px`;
}

// Keys reach a stepper without a click first: the document routes them to the stepper that
// has the focus, else the one under the pointer, else the page's stepper (focused on load).
// Buttons that become disabled (First, Last) drop the focus; the keys keep working.
let keyTarget = null; // the stepper the keys go to when focus is nowhere in particular
let hovered = null;
const keyHandlers = new Map();
function activate(root, focus = false) {
  keyTarget = root;
  if (focus && root) root.focus({ preventScroll: true });
}
function routeKeys(root, handler) {
  keyHandlers.set(root, handler);
  const enter = () => (hovered = root);
  const leave = () => hovered === root && (hovered = null);
  const take = () => activate(root);
  root.addEventListener("pointerenter", enter);
  root.addEventListener("pointerleave", leave);
  root.addEventListener("focusin", take);
  root.addEventListener("pointerdown", take);
  if (keyHandlers.size === 1) document.addEventListener("keydown", dispatchKey);
  return () => {
    keyHandlers.delete(root);
    if (keyTarget === root) keyTarget = null;
    if (hovered === root) hovered = null;
    if (!keyHandlers.size) document.removeEventListener("keydown", dispatchKey);
  };
}
function dispatchKey(event) {
  if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
  const focused = document.activeElement;
  let target = null;
  for (const root of keyHandlers.keys()) if (root.contains(focused)) target = root;
  const typing =
    focused && (focused.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(focused.tagName));
  if (!target && typing) return; // a notebook cell being edited keeps its keys
  if (!target && hovered && keyHandlers.has(hovered)) target = hovered;
  const idle = !focused || focused === document.body || focused === document.documentElement;
  if (!target && idle && keyTarget && keyHandlers.has(keyTarget)) target = keyTarget;
  if (!target) return;
  keyHandlers.get(target)(event);
  if (event.defaultPrevented) event.stopPropagation(); // JupyterLab must not act on it too
}

// Presentation mode: the "Present" button or F; the graph fills the screen with the
// narration as a large caption; clickers (PageDown/PageUp, arrows, Space) step; B or "."
// blanks the screen; Escape leaves. Also the text-size control, in every mode.
const TEXT_SIZES = [1, 1.25, 1.5, 2];
class Presenter {
  constructor(root, tools, actions) {
    this.root = root;
    this.actions = actions;
    this.caption = element("div", "gv-caption");
    this.caption.setAttribute("aria-live", "polite");
    root.append(this.caption);
    this.button = button("Present", "Presentation mode: full screen, large caption (F; Esc leaves)", () =>
      this.toggle(),
    );
    this.button.classList.add("gv-present-btn");
    const sizeBox = element("label", "gv-textsize", "text ");
    this.size = element("select", "gv-textsize-select");
    this.size.title = "Text size";
    for (const s of TEXT_SIZES) {
      const o = element("option", "", `${Math.round(s * 100)}%`);
      o.value = String(s);
      this.size.append(o);
    }
    this.size.addEventListener("change", () => this.setTextScale(Number(this.size.value)));
    sizeBox.append(this.size);
    tools.append(sizeBox);
    root.querySelector(".gv-toolbar").append(this.button);
    this.onResize = () => actions.fit();
    this.onFullscreen = () => {
      if (!document.fullscreenElement && this.presenting()) this.leave();
    };
    document.addEventListener("fullscreenchange", this.onFullscreen);
  }

  presenting() {
    return this.root.classList.contains("gv-present");
  }

  setTextScale(scale) {
    this.root.style.setProperty("--gv-text-scale", String(scale));
    this.size.value = String(scale);
  }

  enter() {
    this.root.classList.add("gv-present");
    this.root.focus({ preventScroll: true });
    activate(this.root);
    window.addEventListener("resize", this.onResize);
    // real full screen where allowed (needs a user gesture); the fixed stage works without
    if (this.root.requestFullscreen && !document.fullscreenElement) {
      this.root.requestFullscreen().catch(() => {});
    }
    this.actions.fit();
  }

  leave() {
    if (!this.presenting()) return;
    this.root.classList.remove("gv-present", "gv-blank");
    window.removeEventListener("resize", this.onResize);
    if (document.fullscreenElement === this.root && document.exitFullscreen) {
      document.exitFullscreen().catch(() => {});
    }
    this.actions.fit();
  }

  toggle() {
    if (this.presenting()) this.leave();
    else this.enter();
  }

  update(index) {
    this.caption.textContent = this.actions.narration(index);
  }

  // The presentation keys; true when the key was used.
  key(event) {
    const k = event.key;
    if (k === "f" || k === "F") return this.use(event, () => this.toggle());
    if (!this.presenting()) return false;
    const blank = this.root.classList.contains("gv-blank");
    if (k === "+" || k === "=" || k === "-") {
      const at = TEXT_SIZES.indexOf(Number(this.size.value));
      const to = Math.min(Math.max(at + (k === "-" ? -1 : 1), 0), TEXT_SIZES.length - 1);
      return this.use(event, () => this.setTextScale(TEXT_SIZES[to]));
    }
    if (k === "b" || k === "B" || k === ".") {
      return this.use(event, () => this.root.classList.toggle("gv-blank"));
    }
    if (k === "Escape") {
      return this.use(event, () => (blank ? this.root.classList.remove("gv-blank") : this.leave()));
    }
    const moves = {
      PageDown: "next",
      ArrowRight: "next",
      ArrowDown: "next",
      " ": "next",
      Enter: "next",
      PageUp: "prev",
      ArrowLeft: "prev",
      ArrowUp: "prev",
      Backspace: "prev",
      Home: "first",
      End: "last",
    };
    const move = moves[k];
    if (!move) return false;
    return this.use(event, () => {
      this.root.classList.remove("gv-blank");
      this.actions[move]();
    });
  }

  use(event, action) {
    event.preventDefault();
    action();
    return true;
  }

  close() {
    this.leave();
    document.removeEventListener("fullscreenchange", this.onFullscreen);
  }
}

// The tensor records' grad field during the replay: None until the leaf's AccumulateGrad
// runs, then the value it wrote (c.grad None -> 36), as in the lectures' combined view.
class GradFields {
  constructor(updates) {
    this.updates = updates;
  }
  apply(view, index) {
    // only the fields whose step lies between the step shown last and this one change (#14)
    const last = this.shown && this.shown.view === view ? this.shown.index : null;
    this.shown = { view, index };
    const lo = Math.min(last === null ? -Infinity : last, index);
    const hi = Math.max(last === null ? Infinity : last, index);
    const fields = view.gradFields || (view.gradFields = new Map());
    if (view.byId.want) {
      view.byId.want(this.updates.filter((u) => u.step >= lo && u.step <= hi && !fields.has(u.id)).map((u) => u.id));
    }
    for (const u of this.updates) {
      if (u.step < lo || u.step > hi) continue;
      if (!fields.has(u.id)) fields.set(u.id, gradField(view.byId.get(u.id)));
      const field = fields.get(u.id);
      if (!field) continue;
      field.textContent = index >= u.step ? u.after : u.before;
      field.classList.toggle("gv-grad-new", index === u.step);
    }
  }
}

// The text after a tensor record's "grad" key, or null.
function gradField(box) {
  if (!box) return null;
  const texts = [...box.querySelectorAll("text")];
  const key = texts.findIndex((t) => t.textContent === "grad");
  return key < 0 || key + 1 >= texts.length ? null : texts[key + 1];
}

// The search box: matches nodes by type, module and tensor names (data.search: [node, text]).
class Search {
  constructor(items, onFind) {
    this.items = (items || []).map(([node, text]) => [node, String(text).toLowerCase()]);
    this.matches = [];
    this.at = -1;
    this.el = element("span", "gv-search");
    this.input = element("input", "gv-search-input");
    this.input.type = "search";
    this.input.placeholder = "find op, module, tensor";
    this.input.title = "Find a node by its type (MmBackward0), module (blocks.0) or tensor name; Enter: next";
    this.input.setAttribute("aria-label", "Find a node");
    this.count = element("span", "gv-search-count");
    this.el.append(this.input, this.count);
    this.input.addEventListener("input", () => this.run(onFind));
    this.input.addEventListener("keydown", (event) => {
      if (event.key !== "Enter") return;
      event.preventDefault();
      this.next(onFind, event.shiftKey ? -1 : 1);
    });
  }

  run(onFind) {
    const query = this.input.value.trim().toLowerCase();
    this.matches = query ? this.items.filter(([, text]) => text.includes(query)).map(([n]) => n) : [];
    this.at = -1;
    this.next(onFind, 1);
  }

  next(onFind, direction) {
    const n = this.matches.length;
    if (n) this.at = (this.at + direction + n) % n;
    this.count.textContent = this.input.value.trim() ? (n ? `${this.at + 1} / ${n}` : "no match") : "";
    onFind(this.matches, n ? this.matches[this.at] : null);
  }
}

// Stepping by module, as in a debugger (data.nav.chains: each node's modules, outermost
// first). Over: past the module the active node runs in; out: past its parent module; back:
// to the start of the previous module's run.
class ModuleNav {
  constructor(data) {
    this.steps = data.steps || [];
    this.chains = (data.nav && data.nav.chains) || {};
  }

  chain(index) {
    const step = this.steps[index];
    return (step && step.node && this.chains[step.node]) || [];
  }

  // The first step after `index` outside the module `up` levels above the innermost.
  past(index, up, last) {
    if (index < 0) return index + 1;
    const chain = this.chain(index);
    const module = chain[chain.length - 1 - up];
    if (module === undefined) return Math.min(index + 1, last);
    let j = index + 1;
    while (j <= last && this.chain(j).includes(module)) j++;
    return Math.min(j, last);
  }

  back(index, start) {
    if (index <= 0) return Math.max(index - 1, start);
    const inner = (i) => this.chain(i)[this.chain(i).length - 1];
    let j = index;
    const here = inner(j);
    while (j > 1 && here !== undefined && inner(j - 1) === here) j--; // start of this run
    if (j === index) {
      j = Math.max(index - 1, 0); // already at a start: the previous run
      const prev = inner(j);
      while (j > 1 && prev !== undefined && inner(j - 1) === prev) j--;
    }
    return j;
  }
}

// Predict, then reveal: with the quiz on, each backward step first asks which node runs next
// (click it) and, for scalar lessons, what gradient it sends; then it shows the step, grades
// the answer against the recorded order and values, says why, and keeps the score.
class Quiz {
  constructor(root, tools, canvas, data, go) {
    this.root = root;
    this.data = data;
    this.answers = data.quiz || [];
    this.go = go;
    this.on = false;
    this.revealed = new Set();
    this.asking = null; // the step asked about
    this.choice = null;
    this.score = { right: 0, asked: 0 };
    const box = element("label", "gv-quizbox");
    this.toggle = element("input", "gv-quiz-toggle");
    this.toggle.type = "checkbox";
    this.toggle.addEventListener("change", () => this.setOn(this.toggle.checked));
    box.append(this.toggle, document.createTextNode(" quiz"));
    tools.append(box);
    this.card = element("div", "gv-quiz");
    this.card.hidden = true;
    this.prompt = element("div", "gv-quiz-prompt");
    this.number = element("input", "gv-quiz-number");
    this.number.type = "text";
    this.number.inputMode = "decimal";
    this.number.placeholder = "gradient it sends";
    this.reveal = button("Reveal", "Show the step and grade the answer", () => this.grade());
    this.reveal.classList.add("gv-quiz-reveal");
    this.number.addEventListener("keydown", (event) => {
      if (event.key === "Enter") this.grade();
    });
    this.verdict = element("div", "gv-quiz-verdict");
    this.tally = element("div", "gv-quiz-score");
    this.card.append(this.prompt, this.number, this.reveal, this.verdict, this.tally);
    root.insertBefore(this.card, root.querySelector(".gv-main"));
    canvas.addEventListener("click", (event) => this.pick(event));
  }

  setOn(on) {
    this.on = on;
    this.toggle.checked = on;
    this.card.hidden = !on;
    this.root.classList.toggle("gv-quizzing", on);
    if (!on) this.asking = null;
    this.showScore();
  }

  // Called before every move: a step forward the student has not predicted becomes a question.
  intercepts(from, to) {
    if (!this.on || to !== from + 1 || to < 1 || this.revealed.has(to)) return false;
    const answer = this.answers[to - 1];
    if (!answer) return false;
    this.asking = to;
    this.choice = null;
    this.prompt.textContent = `Step ${to}: which node runs next? Click it on the graph.`;
    this.number.hidden = answer.value === null || answer.value === undefined;
    this.number.value = "";
    this.verdict.textContent = "";
    this.root.dataset.quiz = "asking";
    return true;
  }

  pick(event) {
    if (this.asking === null) return;
    const node = event.target.closest && event.target.closest("g.node[id]");
    if (!node) return;
    for (const e of this.root.querySelectorAll(".gv-quiz-choice")) e.classList.remove("gv-quiz-choice");
    node.classList.add("gv-quiz-choice");
    this.choice = node.id;
    const label = node.querySelector("text");
    this.prompt.textContent = `Step ${this.asking}: you chose ${label ? label.textContent : node.id}.`;
    if (this.number.hidden) this.grade();
    else this.number.focus();
  }

  grade() {
    const step = this.asking;
    if (step === null || this.choice === null) {
      this.verdict.textContent = "Click the node you think runs next first.";
      return;
    }
    const answer = this.answers[step - 1];
    const nodeRight = this.choice === answer.node;
    let valueRight = true;
    let valueText = "";
    if (!this.number.hidden) {
      const given = Number(this.number.value.trim());
      const want = answer.value;
      valueRight = this.number.value.trim() !== "" && Math.abs(given - want) <= 1e-6 * Math.max(1, Math.abs(want));
      valueText = valueRight ? ` It sends ${want}: right.` : ` It sends ${want}, not ${this.number.value.trim() || "(nothing)"}.`;
    }
    const right = nodeRight && valueRight;
    this.score.asked += 1;
    if (right) this.score.right += 1;
    const ready = answer.ready.map((r) => `${r.type} (seq ${r.seq})`).join(", ");
    const why =
      `Ready then: ${ready}. The engine runs the ready node with the highest sequence number: ${answer.type}.`;
    const narration = String((this.data.steps[step] || {}).narration || "");
    this.verdict.textContent = `${nodeRight ? "Right node." : "Wrong node."}${valueText} ${why} ${narration}`;
    this.root.dataset.quiz = right ? "right" : "wrong";
    for (const e of this.root.querySelectorAll(".gv-quiz-choice")) e.classList.remove("gv-quiz-choice");
    this.asking = null;
    this.revealed.add(step);
    this.showScore();
    this.go(step);
  }

  showScore() {
    this.tally.textContent = `score ${this.score.right} / ${this.score.asked}`;
  }
}

// Mount a stepper into `el`; `model` is anywidget's model or the standalone page's stand-in.
export function mount(el, model) {
  const svgText = (name) => (model.get("svgs") || {})[name];
  const data = model.get("data");
  const css = model.get("css");
  const schedule = data.schedule;
  const last = data.count - 1;
  const forward = data.forward || []; // the forward frames' panels (under watch())
  const modules = data.modules || null; // module views: collapsed depths and what boxes open
  const collapsedViews = modules ? modules.collapsed : [];
  let lastCollapsed = modules ? modules.default : null;
  const start = Number(data.first) || 0; // -F, or 0 (the seed) without forward frames
  const prefix = data.prefix || "";
  const viewNames = data.views || Object.keys(model.get("svgs") || {});
  const nav = new ModuleNav(data);
  // unique even if the module is loaded twice on one page (the scoped stylesheet uses it)
  const id = `gvs${++mounted}-${Math.random().toString(36).slice(2, 8)}`;
  const cleanups = [];

  const root = element("div", "gv-stepper");
  root.dataset.gvMount = id;
  root.tabIndex = 0;
  const style = document.createElement("style");
  style.textContent = String(css.scoped || "").split(SCOPE).join(`.gv-stepper[data-gv-mount="${id}"]`);
  root.append(style);

  // -- controls --
  const bar = element("div", "gv-toolbar");
  const first = button("« First", "First step (Home)", () => go(start));
  const prev = button("‹ Prev", "Previous step (←)", () => go(current() - 1));
  const play = button("▶ Play", "Play / pause (space)", () => toggle());
  play.classList.add("gv-play");
  const next = button("Next ›", "Next step (→)", () => go(current() + 1));
  const end = button("Last »", "Last step (End)", () => go(last));
  first.classList.add("gv-first");
  prev.classList.add("gv-prev");
  next.classList.add("gv-next");
  end.classList.add("gv-last");
  const speed = element("select", "gv-speed");
  speed.title = "Play speed";
  for (const s of SPEEDS) {
    const o = element("option", "", `${s}×`);
    o.value = String(s);
    o.selected = s === 1;
    speed.append(o);
  }
  const slider = element("input", "gv-slider");
  slider.type = "range";
  slider.min = String(start);
  slider.max = String(last);
  slider.step = "1";
  slider.title = "Step";
  slider.addEventListener("input", () => go(Number(slider.value)));
  const counter = element("span", "gv-counter");
  counter.setAttribute("aria-live", "polite");
  // stepping by module (when the recording has module data), as in a debugger
  const over = button("Over ⤼", "Step over: past the module the active node runs in (o)", () => go(nav.past(current(), 0, last)));
  const out = button("Out ⤴", "Step out: past the module around it (u)", () => go(nav.past(current(), 1, last)));
  const back = button("⤺ Back", "Back to where the previous module started (b)", () => go(nav.back(current(), start)));
  over.classList.add("gv-over");
  out.classList.add("gv-out");
  back.classList.add("gv-back");
  bar.append(first, prev, play, next, end);
  if (data.nav) bar.append(back, over, out);
  bar.append(speed, slider, counter);

  const tools = element("div", "gv-toolbar gv-tools");
  const viewSelect = element("select", "gv-view");
  viewSelect.title = "View";
  for (const name of viewNames) {
    if (collapsedViews.includes(name) && name !== collapsedViews[0]) continue;
    const choice = collapsedViews.includes(name) ? "collapsed" : name;
    const o = element("option", "", choice);
    o.value = choice;
    viewSelect.append(o);
  }
  viewSelect.addEventListener("change", () => {
    setView(viewSelect.value === "collapsed" ? lastCollapsed : viewSelect.value);
  });
  // the depth of the collapsed view: modules deeper than it are one box each
  const depthBox = element("label", "gv-depthbox", "collapse modules at depth ");
  const depthSelect = element("select", "gv-depth");
  depthSelect.title = "Draw each module at this depth (0: the model) as one box; click a box to expand it";
  for (const name of collapsedViews) {
    const o = element("option", "", name.slice("collapsed-".length));
    o.value = name;
    depthSelect.append(o);
  }
  depthSelect.addEventListener("change", () => setView(depthSelect.value));
  depthBox.append(depthSelect);
  depthBox.hidden = true;
  const labelsBox = element("label", "gv-labels");
  const labels = element("input");
  labels.type = "checkbox";
  labels.checked = true;
  labels.addEventListener("change", () => root.classList.toggle("gv-nolabels", !labels.checked));
  labelsBox.append(labels, document.createTextNode(" gradient labels"));
  const zoomIn = button("+", "Zoom in (or Ctrl + wheel)", () => zoom(1 / 1.25, undefined, undefined, true));
  const zoomOut = button("−", "Zoom out", () => zoom(1.25, undefined, undefined, true));
  const fit = button("Fit", "Fit the graph to the view", () => resetZoom());
  fit.classList.add("gv-fit");
  const followButton = button("Follow", "The view follows the active node (c); moving the view by hand pauses it", () => setFollow(!camera.following));
  followButton.classList.add("gv-follow");
  const search = new Search(data.search, (matches, at) => found(matches, at));
  const download = button("Download SVG", "Download this step as SVG", () => downloadSvg());
  download.classList.add("gv-download");
  tools.append(viewSelect);
  if (collapsedViews.length) tools.append(depthBox);
  tools.append(search.el, labelsBox, zoomOut, zoomIn, fit, followButton, download);

  // -- graph and panel --
  const main = element("div", "gv-main");
  const canvas = element("div", "gv-canvas");
  const stage = element("div", "gv-stage");
  const panel = element("aside", "gv-panel");
  stage.append(canvas);
  main.append(stage, panel);
  root.append(bar, tools, main);
  el.append(root);
  // explanations (assets/explain.js, where shipped): each adds controls, overlays, panel rows
  const extras = EXTENSIONS.flatMap((make) => make({ root, bar, tools, main, panel, data, prefix, go, render, view: () => view }) || []);

  const views = new Map();
  let view = null;
  let shown = -1;
  let waiting = null; // a view asked of the kernel, not here yet
  const camera = new Camera(canvas, () => {
    const b = view.box;
    root.dataset.camera = `${b.x} ${b.y} ${b.w} ${b.h}`; // what is on screen, in SVG units
    minimap.update(b, activeBox());
  });
  const minimap = new Minimap((x, y) => {
    setFollow(false);
    const b = view.box;
    camera.set({ ...b, x: x - b.w / 2, y: y - b.h / 2 });
  });
  stage.append(minimap.el);
  cleanups.push(() => camera.observer && camera.observer.disconnect());

  function setFollow(on) {
    camera.following = on;
    root.dataset.follow = on ? "on" : "off";
    followButton.classList.toggle("gv-on", on);
    followButton.setAttribute("aria-pressed", String(on));
    if (on) follow();
  }

  // The element the active step lights up in this view: its node, or the collapsed module
  // box that holds it; forward frames: the first backward node the op made.
  function activeElement() {
    const index = current();
    const node = index < 0 ? ((forward[index - start] || {}).nodes || [])[0] : (data.steps[index] || {}).node;
    return node ? elementOf(node) : null;
  }

  function elementOf(node) {
    const direct = view.byId.get(`${prefix}_${node}`);
    if (direct) return direct;
    const fold = data.folded && view.byId.get(`${prefix}_${data.folded[node]}`); // fold=True
    if (fold) return fold;
    const chain = (data.nav && data.nav.chains[node]) || [];
    for (let i = chain.length - 1; i >= 0; i--) {
      const box = view.byId.get(`${prefix}_bm${chain[i]}`);
      if (box) return box;
    }
    return null;
  }

  // Where the backward pass starts (the seed lights nothing up on its own): the camera's
  // first stop, so a big graph does not open on an empty stretch of its layout.
  function firstToRun() {
    const node = (data.steps[1] || {}).node;
    return current() === 0 && node ? elementOf(node) : null;
  }

  // A forward frame in the collapsed view: the op runs inside a module drawn as one box, and
  // backward classes do not apply yet, so the box itself is marked (gv-here) (#14).
  let here = null;
  function markHere(index) {
    if (here) here.classList.remove("gv-here");
    here = null;
    if (index >= 0) return;
    const node = ((forward[index - start] || {}).nodes || [])[0];
    const el = node ? elementOf(node) : null;
    if (!el || el.id === `${prefix}_${node}`) return; // the op's own node is drawn: born shows it
    here = el;
    el.classList.add("gv-here");
    root.dataset.here = el.id;
  }

  function activeBox() {
    const el = activeElement();
    return el ? view.geometry.box(el) : null;
  }

  function follow() {
    if (!view) return;
    const el = activeElement() || firstToRun();
    if (el) camera.focus(view.geometry, el, view.geometry.around(el));
    minimap.update(view.box, el ? view.geometry.box(el) : null);
  }

  // Search results: highlight the matches shown in this view, go to the chosen one's step.
  let highlighted = [];
  function found(matches, at) {
    for (const e of highlighted) e.classList.remove("gv-match", "gv-match-current");
    highlighted = [];
    const shown = matches.slice(0, MAX_MATCHES);
    if (view.byId.want) view.byId.want(shown.map((node) => `${prefix}_${node}`)); // a lazy view: one parse for all
    for (const node of shown) {
      const e = elementOf(node);
      if (e) {
        e.classList.add("gv-match");
        highlighted.push(e);
      }
    }
    if (at === null) return;
    const e = elementOf(at);
    if (e) e.classList.add("gv-match-current");
    root.dataset.found = at;
    const ran = schedule.nodes[`${prefix}_${at}`];
    setFollow(true);
    if (ran !== null && ran !== undefined && ran !== current()) go(ran);
    else if (e) camera.focus(view.geometry, e, []);
  }
  const presenter = new Presenter(root, tools, {
    next: () => go(current() + 1),
    prev: () => go(current() - 1),
    first: () => go(start),
    last: () => go(last),
    fit: () => reframe(),
    narration: (index) =>
      String((index < 0 ? forward[index - start] : data.steps[index] || {})?.narration || ""),
  });
  cleanups.push(() => presenter.close());
  const grads = new GradFields(data.grads || []);
  const quiz = new Quiz(root, tools, canvas, data, (index) => go(index));

  function current() {
    return Math.min(Math.max(Number(model.get("step")) || 0, start), last);
  }

  function showView(name) {
    if (!viewNames.includes(name)) name = viewNames[0];
    if (!svgText(name)) {
      // not laid out yet: the notebook's kernel lays it out (change:svgs brings it)
      waiting = name;
      root.dataset.waiting = name;
      canvas.replaceChildren(element("p", "gv-wait", `laying out the ${name} view…`));
      if (model.send) model.send({ type: "view", name });
      return;
    }
    waiting = null;
    delete root.dataset.waiting;
    if (!views.has(name)) {
      const born = (schedule.born && schedule.born[name]) || (model.get("born") || {})[name];
      views.set(name, new View(svgText(name), name, schedule, born));
    }
    const chosen = views.get(name);
    if (chosen === view && canvas.firstChild === view.svg) return;
    view = chosen;
    const collapsed = collapsedViews.includes(name);
    viewSelect.value = collapsed ? "collapsed" : name;
    depthBox.hidden = !collapsed;
    if (collapsed) {
      lastCollapsed = name;
      depthSelect.value = name;
    }
    root.dataset.view = name;
    // the camera is placed before the SVG enters the page: measuring the canvas with a big
    // SVG inside would lay all of it out, and a big view enters with only what is near
    canvas.replaceChildren();
    canvas.style.height = stageHeight(view.home);
    camera.size = null; // measured again once, for this height
    camera.view = view;
    camera.start(view); // before the first placement: a big view never fills in whole (#14)
    view.showBox(camera.rect());
    canvas.replaceChildren(view.svg);
    minimap.show(view, camera.scaleFor(view.home) < Camera.readable());
    for (const e of highlighted) e.classList.remove("gv-match", "gv-match-current");
    highlighted = [];
    shown = -1;
    render();
    if (search.matches.length) search.next(found, 0);
  }

  function setView(name) {
    model.set("view", name);
    model.save_changes();
    showView(name);
  }

  // The collapsed module under a pointer event's target in the shown view, or null.
  function boxAt(target) {
    const opens = modules && modules.opens[view.name];
    let g = opens && target && target.closest ? target.closest("g[id]") : null;
    while (g && !opens[g.id]) g = g.parentElement ? g.parentElement.closest("g[id]") : null;
    return g ? g.id : null;
  }

  // Expand a collapsed module: the layout where it is a cluster, same step, zoomed to it.
  function expand(boxId) {
    const info = modules.opens[view.name][boxId];
    setView(info.opens);
    for (const old of view.svg.querySelectorAll(".gv-expanded")) old.classList.remove("gv-expanded");
    root.dataset.expanded = info.module;
    const cluster = view.byId.get(info.cluster);
    if (!cluster) return;
    cluster.classList.add("gv-expanded");
    const g = view.geometry.box(cluster); // from its shapes: no layout
    if (!g.w) return;
    const a = { x: g.x, y: g.y };
    const b = { x: g.x + g.w, y: g.y + g.h };
    // centre the module, never closer than the graph's natural size (1 pt = 4/3 px)
    const area = camera.rect();
    const w = Math.max((b.x - a.x) * 1.5, area.width * 0.75);
    const h = Math.max((b.y - a.y) * 1.5, area.height * 0.75);
    const box = { x: (a.x + b.x - w) / 2, y: (a.y + b.y - h) / 2, w, h };
    camera.set(w >= view.home.w && h >= view.home.h ? { ...view.home } : box);
  }

  function render() {
    const index = current();
    if (!view) return;
    if (index !== shown) {
      view.apply(index);
      shown = index;
      follow();
      markHere(index);
    }
    root.dataset.step = String(index);
    slider.value = String(index);
    counter.textContent =
      index < 0 ? `forward ${index - start + 1} / ${forward.length}` : `step ${index} / ${last}`;
    root.dataset.phase = index < 0 ? "forward" : "backward";
    first.disabled = prev.disabled = index === start;
    next.disabled = end.disabled = index === last;
    if (index < 0) fillForward(forward[index - start] || {});
    else fillPanel(data.steps[index] || {}, index);
    if (presenter) presenter.update(index);
    if (grads) grads.apply(view, index);
    const extraRows = [];
    for (const x of extras) x.update(view, index, extraRows);
    panel.append(...extraRows);
  }

  function go(index) {
    const target = Math.min(Math.max(index, start), last);
    if (target === current()) return;
    if (quiz.intercepts(current(), target)) return;
    model.set("step", target);
    model.save_changes();
    render();
  }

  function fillPanel(step, index) {
    const parts = [];
    const head = element("div", "gv-panel-head");
    head.append(element("span", "gv-panel-index", index === 0 ? "seed" : `step ${index}`));
    head.append(element("span", "gv-panel-type", step.type || ""));
    parts.push(head);
    if (step.module) parts.push(row("module", String(step.module)));
    if (step.forward) parts.push(row("forward op", String(step.forward)));
    else if (step.op && index > 0) parts.push(row("op", String(step.op)));
    if (step.received && step.received.length) parts.push(list("received", step.received.map(String)));
    if (step.sent && step.sent.length) {
      parts.push(list("sent", step.sent.map((s) => `${s.slot} → ${s.to}: ${s.value}`)));
    }
    parts.push(element("p", "gv-narration", step.narration || ""));
    // a user's hook changed a gradient here: say so, with the value before and after
    const hooks = step.hooks || [];
    for (const change of hooks) parts.push(element("p", "gv-warning", String(change)));
    if (step.flow_ok === false && !hooks.length) {
      parts.push(element("p", "gv-warning", "flow check failed"));
    }
    if (step.checked === false) {
      // explain.py falls back to a plain sentence when a formula disagrees; unchecked means
      // the saved tensors it needs were already freed, so the numbers could not be verified.
      parts.push(element("p", "gv-note", "formula not checked: its saved tensors were freed " +
        "(record with retain_graph=True to check it against the recorded numbers)"));
    }
    panel.replaceChildren(...parts);
  }

  // A forward frame: which op ran, at which line, what it made and what autograd recorded.
  function fillForward(op) {
    const parts = [];
    const head = element("div", "gv-panel-head");
    head.append(element("span", "gv-panel-index", `forward ${op.index || ""}`));
    head.append(element("span", "gv-panel-type", op.recorded || op.type || ""));
    parts.push(head);
    if (op.code) parts.push(row("code", String(op.code)));
    if (op.line) parts.push(row("line", String(op.line)));
    if (op.outputs && op.outputs.length) parts.push(list("made", op.outputs.map(String)));
    parts.push(element("p", "gv-narration", op.narration || ""));
    panel.replaceChildren(...parts);
  }

  function row(key, value) {
    const r = element("div", "gv-row");
    r.append(element("span", "gv-key", key), element("span", "gv-value", value));
    return r;
  }

  function list(key, items) {
    const box = element("div", "gv-row");
    box.append(element("span", "gv-key", key));
    const ul = element("ul", "gv-list");
    for (const item of items) ul.append(element("li", "", item));
    box.append(ul);
    return box;
  }

  // -- play --
  let timer = null;
  function stopPlay() {
    if (timer !== null) clearInterval(timer);
    timer = null;
    play.textContent = "▶ Play";
    root.classList.remove("gv-playing");
  }
  function toggle() {
    if (timer !== null) return stopPlay();
    if (current() === last) go(start);
    play.textContent = "⏸ Pause";
    root.classList.add("gv-playing");
    timer = setInterval(() => {
      if (current() >= last) return stopPlay();
      go(current() + 1);
    }, STEP_MS / Number(speed.value));
  }
  speed.addEventListener("change", () => {
    if (timer !== null) {
      stopPlay();
      toggle();
    }
  });
  cleanups.push(stopPlay);

  // -- keys --
  const onKey = (event) => {
    const tag = event.target && event.target.tagName;
    const box = tag === "INPUT" && event.target.type === "checkbox"; // keys still step
    if ((tag === "INPUT" && !box) || tag === "SELECT" || tag === "TEXTAREA") return;
    if (presenter.key(event)) return;
    if (extras.some((x) => x.key(event))) return; // m memory, h health, d first difference
    const keys = {
      PageDown: () => go(current() + 1),
      PageUp: () => go(current() - 1),
      ArrowRight: () => go(current() + 1),
      ArrowDown: () => go(current() + 1),
      ArrowLeft: () => go(current() - 1),
      ArrowUp: () => go(current() - 1),
      Home: () => go(start),
      End: () => go(last),
      o: () => go(nav.past(current(), 0, last)),
      u: () => go(nav.past(current(), 1, last)),
      b: () => go(nav.back(current(), start)),
      c: () => setFollow(!camera.following), // F presents (Presenter.key)
      " ": () => toggle(),
    };
    const action = keys[event.key];
    if (!action || (event.key === " " && tag === "BUTTON")) return;
    event.preventDefault();
    action();
  };
  cleanups.push(routeKeys(root, onKey));

  // -- zoom and pan (viewBox only: the layout never changes) --
  function zoom(factor, cx, cy, byHand) {
    if (byHand) setFollow(false);
    const b = view.box;
    const x = cx === undefined ? b.x + b.w / 2 : cx;
    const y = cy === undefined ? b.y + b.h / 2 : cy;
    camera.set({ x: x - (x - b.x) * factor, y: y - (y - b.y) * factor, w: b.w * factor, h: b.h * factor });
  }
  function resetZoom() {
    setFollow(false);
    camera.set({ ...view.home });
  }
  // The stage changed size (presentation mode, a resize): the whole view when it is
  // readable there, else the camera follows the active node again.
  function reframe() {
    if (!view) return;
    if (camera.scaleFor(view.home) >= Camera.readable()) camera.set({ ...view.home });
    else {
      camera.start(view);
      setFollow(true);
    }
  }
  function toGraph(event) {
    const r = canvas.getBoundingClientRect();
    return canvasToGraph(view, event.clientX - r.left, event.clientY - r.top);
  }
  canvas.addEventListener(
    "wheel",
    (event) => {
      if (!event.ctrlKey && !event.metaKey) return;
      event.preventDefault();
      const [x, y] = toGraph(event);
      zoom(event.deltaY > 0 ? 1.15 : 1 / 1.15, x, y, true);
    },
    { passive: false },
  );
  let drag = null;
  canvas.addEventListener("pointerdown", (event) => {
    if (event.button !== 0 || !view) return;
    const node = event.target && event.target.closest ? event.target.closest("g.node") : null;
    drag = { x: event.clientX, y: event.clientY, box: { ...view.box }, hit: boxAt(event.target), node };
    canvas.setPointerCapture(event.pointerId);
  });
  canvas.addEventListener("pointermove", (event) => {
    if (!drag) return;
    const moved = Math.abs(event.clientX - drag.x) + Math.abs(event.clientY - drag.y);
    if (moved < 5 && !drag.panning) return;
    if (!drag.panning) setFollow(false);
    drag.panning = true;
    const rect = camera.rect();
    const scale = Math.max(drag.box.w / rect.width, drag.box.h / rect.height);
    camera.set({
      ...drag.box,
      x: drag.box.x - (event.clientX - drag.x) * scale,
      y: drag.box.y - (event.clientY - drag.y) * scale,
    });
  });
  const endDrag = () => {
    drag = null;
  };
  canvas.addEventListener("pointerup", (event) => {
    // a click (not a drag) on a collapsed module expands it
    const hit = drag && drag.hit;
    const node = drag && drag.node;
    const still = drag && Math.abs(event.clientX - drag.x) + Math.abs(event.clientY - drag.y) < 5;
    endDrag();
    if (hit && still) expand(hit);
    else if (node && still) jumpTo(node); // a click on a node: go to the step it ran at
  });
  function jumpTo(nodeElement) {
    const ran = schedule.nodes[nodeElement.id];
    if (ran === null || ran === undefined) return;
    setFollow(true);
    go(ran);
  }
  canvas.addEventListener("pointercancel", endDrag);

  // -- download the current step: its classes and the stylesheet inlined --
  function stepSvgText() {
    // a lazy view (assets/lazy.js) writes its unparsed nodes and edges from their text
    const lazy = view.virtual && view.virtual.snapshot ? view.virtual.snapshot() : null;
    if (view.virtual && !lazy) view.virtual.all();
    const clone = lazy ? lazy.clone : view.svg.cloneNode(true);
    if (view.virtual && !lazy) view.virtual.restore();
    clone.style.removeProperty("transform");
    const [w, h] = view.size;
    if (w) clone.setAttribute("width", w);
    if (h) clone.setAttribute("height", h);
    const b = view.home;
    clone.setAttribute("viewBox", `${b.x} ${b.y} ${b.w} ${b.h}`);
    const sheet = document.createElementNS("http://www.w3.org/2000/svg", "style");
    sheet.textContent = String(css.plain || "") + (labels.checked ? "" : ".gv_grad{display:none}");
    clone.insertBefore(sheet, clone.firstChild);
    const text = new XMLSerializer().serializeToString(clone);
    return lazy ? lazy.text(text) : text;
  }
  function downloadSvg() {
    const blob = new Blob([stepSvgText()], { type: "image/svg+xml" });
    const url = URL.createObjectURL(blob);
    const a = element("a");
    a.href = url;
    const index = current();
    const number = (n) => String(n).padStart(3, "0");
    const name = index < 0 ? `forward-${number(index - start + 1)}` : `step-${number(index)}`;
    a.download = `gradviz-${name}.svg`;
    root.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  // -- theme: follow JupyterLab (body[data-jp-theme-light]) or the system's preference --
  const applyTheme = () => root.classList.toggle("gv-dark", pageIsDark());
  applyTheme();
  if (document.body && window.MutationObserver) {
    const observer = new MutationObserver(applyTheme);
    observer.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-light"] });
    cleanups.push(() => observer.disconnect());
  }

  const onStep = () => render();
  const onView = () => showView(model.get("view"));
  const onSvgs = () => {
    if (waiting && svgText(waiting)) showView(waiting);
  };
  model.on("change:step", onStep);
  model.on("change:view", onView);
  model.on("change:svgs", onSvgs);
  cleanups.push(() => {
    model.off("change:step", onStep);
    model.off("change:view", onView);
    model.off("change:svgs", onSvgs);
  });

  setFollow(true);
  showView(model.get("view") || "backward");
  exposeState(root, () => view, current);
  return () => {
    for (const undo of cleanups) undo();
    root.remove();
  };
}

// Explanations (#18, assets/explain.js) register here: extend(make), where make(ctx) returns
// parts with update(view, index, panelRows) and key(event), or null when the data has none.
const EXTENSIONS = [];
export function extend(make) {
  EXTENSIONS.push(make);
}

// -- readiness and the tests' API (#14) -------------------------------------------------------
// data-ready="1" once the first frame with the graph has been painted; root.gvState() tells
// the step, the view, which elements are in the DOM and every element's replay classes (big
// graphs keep elements far from the camera out of the DOM, so the DOM alone cannot say).
function exposeState(root, getView, current) {
  requestAnimationFrame(() =>
    setTimeout(() => {
      root.dataset.ready = "1";
      if (performance.mark) performance.mark("gv-ready");
    }, 0),
  );
  root.gvState = () => {
    const view = getView();
    const classes = {};
    if (view) for (const [id, cls] of view.current) if (cls) classes[id] = cls;
    return {
      step: current(),
      view: view ? view.name : null,
      elements: view ? view.byId.size : 0,
      attached: view && view.virtual ? view.virtual.attached : null,
      parsed: view && view.lazy ? view.lazy.parsed() : null, // of its nodes and edges
      classes,
    };
  };
}

// anywidget's entry point. Once the live stepper shows, the static picture published
// beside it for places where widgets do not run (an exported page) steps aside.
export function render({ model, el }) {
  const fallback = String(model.get("fallback") || "");
  if (fallback) {
    for (const e of document.querySelectorAll(".gv-static[data-gv-fallback]")) {
      if (e.getAttribute("data-gv-fallback") === fallback) e.style.display = "none";
    }
  }
  return mount(el, model);
}

export default { render };

// A model with anywidget's surface for the standalone page: local state, no kernel.
export class LocalModel {
  constructor(state) {
    this.state = { ...state };
    this.handlers = new Map();
  }
  get(key) {
    return this.state[key];
  }
  set(key, value) {
    if (this.state[key] === value) return;
    this.state[key] = value;
    for (const fn of this.handlers.get(`change:${key}`) || []) fn();
  }
  save_changes() {}
  send() {} // the page ships every view it offers: nothing to ask for
  on(event, fn) {
    if (!this.handlers.has(event)) this.handlers.set(event, new Set());
    this.handlers.get(event).add(fn);
  }
  off(event, fn) {
    const set = this.handlers.get(event);
    if (set) set.delete(fn);
  }
}

// The standalone page: each data script (class gv-replay-data) holds one replay (JSON, or for big
// replays gzip, 7 bits a character, that DecompressionStream inflates); mount it right after the script.
// Returns a promise of the mounted models.
export async function mountStandalone(doc = document) {
  const steppers = [];
  for (const script of doc.querySelectorAll("script.gv-replay-data")) {
    if (script.dataset.gvMounted) continue;
    script.dataset.gvMounted = "1";
    const host = element("div", "gv-host");
    script.after(host);
    const text = script.dataset.encoding === "gzip+7bit" ? await inflate(script.textContent) : script.textContent;
    const model = new LocalModel(expandBorn(JSON.parse(text)));
    if (performance.mark) performance.mark("gv-data");
    mount(host, model);
    if (performance.mark) performance.mark("gv-mounted");
    if (!steppers.length) activate(host.querySelector(".gv-stepper"), true);
    steppers.push(model);
  }
  return steppers;
}

// The page says when each element appears once for all views (born["*"], gradviz/stepper/page.py
// _shared_born): each view gets the shared frames of the elements its SVG has, then its own.
function expandBorn(state) {
  const schedule = state.data && state.data.schedule;
  const born = schedule && schedule.born;
  if (!born || !born["*"]) return state;
  const out = {};
  for (const [view, own] of Object.entries(born)) {
    if (view === "*") continue;
    const mine = {};
    for (const match of (state.svgs[view] || "").matchAll(/ id="([^"]+)"/g)) {
      if (Object.hasOwn(born["*"], match[1])) mine[match[1]] = born["*"][match[1]];
    }
    out[view] = { ...mine, ...own };
  }
  schedule.born = out;
  return state;
}

// gzip, 7 bits a character -> text, with the browser's own decompressor (no library, no eval).
async function inflate(packed) {
  const stream = new Blob([sevenBitBytes(packed)]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).text();
}

// The page's packed data (gradviz/stepper/sevenbit.py): each character carries 7 bits, its code
// below 128, or U+0100 plus the value for NUL, CR and "<" (which the HTML parser would change).
function sevenBitBytes(text) {
  const bytes = new Uint8Array(Math.floor((text.length * 7) / 8));
  let bits = 0;
  let held = 0;
  let o = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    held = ((held << 7) | (code < 128 ? code : code - 256)) & 0x7fff;
    bits += 7;
    if (bits >= 8) {
      bits -= 8;
      if (o < bytes.length) bytes[o++] = (held >> bits) & 255;
    }
  }
  return bytes;
}
