// Where a view's nodes are, from the SVG's own attributes (no layout), and who their
// neighbours are (the camera brings a node and its neighbours on screen).

// The transform from an element's user space to its <svg>'s viewBox space, from the
// transform attributes alone (no layout needed; the layout never changes).
export function matrixTo(el, svg) {
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
export class Geometry {
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

  // The box around the graph's nodes and edges, the legend aside (cached); `fallback` (the
  // whole view) where some are not parsed yet (a big view loaded lazily) or there are none.
  content(fallback) {
    if (this.drawn === undefined) {
      const boxes = [];
      for (const g of this.svg.querySelectorAll("g.node:not(.gv_legend_item), g.edge")) {
        const b = this.box(g);
        if (b.w || b.h) boxes.push(b);
      }
      this.drawn = boxes.length ? union(boxes) : null;
    }
    return this.partial || !this.drawn ? fallback : this.drawn;
  }

  // The smallest font size (SVG units) of the nodes' text, the legend's aside: presentation
  // mode keeps even that readable. Read once from the attributes; `fallback` where none.
  smallestFont(fallback) {
    if (this.font === undefined) {
      let least = Infinity;
      for (const t of this.svg.querySelectorAll("g.node:not(.gv_legend_item) text[font-size]")) {
        const size = Number(t.getAttribute("font-size"));
        if (size > 0 && size < least) least = size;
      }
      this.font = least === Infinity ? null : least;
    }
    return this.font === null ? fallback : this.font;
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
export function dotName(el, svg) {
  const title = el.querySelector(":scope > title");
  if (title) return title.textContent;
  const graph = svg.querySelector("g.graph");
  const prefix = graph ? `${graph.id}_` : null;
  return prefix && el.classList.contains("node") && el.id.startsWith(prefix) ? el.id.slice(prefix.length) : null;
}

// An edge's ends ("a->b" in its <title>); a forward edge the page ships without one has them in
// its id: the graph's id, "_fe_", a, "_", b.
export function edgeEnds(el, svg) {
  const title = el.querySelector("title");
  if (title) return title.textContent.split("->");
  const graph = svg.querySelector("g.graph");
  const prefix = graph ? `${graph.id}_fe_` : null;
  if (!prefix || !el.id.startsWith(prefix)) return [];
  const ends = el.id.slice(prefix.length).split("_");
  return ends.length === 2 ? ends : [];
}

export const NUMBERS = /-?\d*\.?\d+(?:e-?\d+)?/g;

// The bounds of an element's drawn shapes in its own user space (x, y, width, height).
export function shapeBounds(el) {
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

// What a view draws at forward frame `index`: the box around every element born by then
// (`all`) and the boxes of the nodes born at it (`newest`, in drawing order); null where
// nothing is drawn yet.
export function drawnRegion(view, index) {
  const boxes = [];
  const newest = [];
  for (const [id, entry] of view.classes.info) {
    if (entry.born === undefined || entry.born > index) continue;
    const el = view.byId.peek ? view.byId.peek(id) : view.byId.get(id);
    const box = el ? view.geometry.box(el) : null;
    if (!box || !(box.w || box.h)) continue; // an element with no shapes has no place
    boxes.push(box);
    if (entry.born === index && el.classList.contains("node")) newest.push(box); // links span far
  }
  if (!boxes.length) return null;
  return { all: union(boxes), newest };
}

export function union(boxes) {
  const x0 = Math.min(...boxes.map((b) => b.x));
  const y0 = Math.min(...boxes.map((b) => b.y));
  const x1 = Math.max(...boxes.map((b) => b.x + b.w));
  const y1 = Math.max(...boxes.map((b) => b.y + b.h));
  return { x: x0, y: y0, w: x1 - x0, h: y1 - y0 };
}
