// Big views parsed lazily, shipped by pages of more than 1,000 backward nodes
// (gradviz/stepper/page.py LAZY_NODES) and by the widget.
// Above VIRTUAL_ABOVE nodes and edges, one pass over the text (svgtext.js) splits it into a
// shell (the root, the graph group, the clusters: parsed at once) and the nodes and edges,
// each parsed the first time the camera comes near it or something asks for it by id.

import { parseSvg, sanitize } from "../dom.js";
import { NUMBERS, dotName, matrixTo } from "../geometry.js";
import { REPLAY_CLASSES } from "../schedule.js";
import { VIRTUAL_ABOVE, Virtual } from "../view.js";
import { HOLDER, TAG, UNSAFE, attrOf, attrsOf, classedText, unescapeXml } from "./svgtext.js";

// The View's `split`: a big view's text split for lazy parsing, or null (parse it whole).
export function splitLazily(text) {
  return LazySvg.split(text);
}

class LazySvg {
  // The split text, or null where the whole text should be parsed (small, or unusual).
  static split(text) {
    if (text.length < 200000 || text.includes("<!") || text.includes("<?")) return null;
    const tag = new RegExp(TAG.source, "g");
    let m = tag.exec(text);
    if (!m || m[1] || m[4] || m[2] !== "svg" || m.index !== text.search(/\S/)) return null;
    const open = `<svg${(m[3].match(/\sxmlns(?::[\w.-]+)?\s*=\s*(?:"[^"]*"|'[^']*')/g) || []).join("")}>`;
    const rootEnd = tag.lastIndex;
    m = tag.exec(text);
    if (!m || m[1] || m[4] || m[2] !== "g" || text.slice(rootEnd, m.index).trim()) return null;
    const shell = [];
    let from = tag.lastIndex;
    shell.push(text.slice(0, from));
    const items = [];
    let depth = 0;
    let item = null;
    let closed = false;
    while ((m = tag.exec(text))) {
      const [, close, name, attrs, self] = m;
      if (name === "g") {
        if (close) {
          if (depth === 0) {
            closed = true;
            break;
          }
          depth--;
          if (depth === 0 && item) {
            item.text = text.slice(item.start, tag.lastIndex);
            shell.push(text.slice(from, item.start), HOLDER);
            from = tag.lastIndex;
            items.push(item);
            item = null;
          }
          continue;
        }
        if (self) continue;
        if (depth === 0) {
          const a = attrsOf(attrs);
          // a group moved as a whole (a side of the combined view): its nodes are not items
          // of their own and their boxes would miss its transform, so parse the view whole
          if (a.transform) return null;
          const cls = (a.class || "").split(/\s+/);
          if (!cls.includes("cluster")) {
            item = { start: m.index, ids: [], node: cls.includes("node"), title: null, fill: null, raw: [Infinity, Infinity, -Infinity, -Infinity] };
            item.ids.push(a.id);
          }
        } else if (item && attrs.includes("id")) {
          const id = attrsOf(attrs).id;
          if (id) item.ids.push(id);
        }
        depth++;
        continue;
      }
      if (!item || close) continue;
      if (name === "title") {
        if (item.title === null) {
          const end = text.indexOf("</title>", tag.lastIndex);
          item.title = end < 0 ? "" : unescapeXml(text.slice(tag.lastIndex, end));
        }
        continue;
      }
      const shape = name === "polygon" || name === "polyline" || name === "path" || name === "ellipse" || name === "text";
      if (!shape) {
        if (attrs.includes("id")) {
          const id = attrsOf(attrs).id;
          if (id) item.ids.push(id);
        }
        continue;
      }
      if (attrs.includes("id")) {
        const id = attrsOf(attrs).id;
        if (id) item.ids.push(id);
      }
      const r = item.raw;
      const add = (x, y) => {
        if (x < r[0]) r[0] = x;
        if (y < r[1]) r[1] = y;
        if (x > r[2]) r[2] = x;
        if (y > r[3]) r[3] = y;
      };
      if (name === "ellipse") {
        const cx = +attrOf(attrs, "cx");
        const cy = +attrOf(attrs, "cy");
        const rx = +attrOf(attrs, "rx");
        const ry = +attrOf(attrs, "ry");
        add(cx - rx, cy - ry);
        add(cx + rx, cy + ry);
      } else if (name === "text") {
        add(+attrOf(attrs, "x"), +attrOf(attrs, "y"));
      } else {
        const numbers = (attrOf(attrs, name === "path" ? "d" : "points") || "").match(NUMBERS) || [];
        for (let i = 0; i + 1 < numbers.length; i += 2) add(+numbers[i], +numbers[i + 1]);
      }
      if (item.fill === null && name !== "text" && name !== "polyline") item.fill = attrOf(attrs, "fill") || ""; // the minimap's colour
    }
    if (!closed || depth !== 0 || items.length <= VIRTUAL_ABOVE) return null;
    shell.push(text.slice(from));
    return new LazySvg(shell.join(""), open, items);
  }

  // The view's ids (shell's, and every node and edge's, parsed on use), names and neighbours
  // from the text, and a Virtual whose nodes and edges wait unparsed behind their places.
  attach(view) {
    view.byId = new LazyIds(view.byId, this);
    const graph = this.svg.querySelector("g.graph");
    const { byName, neighbours } = this.names(graph ? graph.id : "");
    Object.assign(view.geometry, { byName, neighbours, ids: view.byId });
    view.geometry.around = lazyAround;
    this.onParse = (item) => {
      const els = item.el.id ? [item.el] : [];
      els.push(...item.el.querySelectorAll("[id]"));
      for (const e of els) {
        e.classList.remove(...REPLAY_CLASSES); // the classes of the step shown instead
        const cls = view.current.get(e.id);
        if (cls) e.classList.add(...cls.split(" "));
      }
      view.geometry.boxes.set(item.el, item.box);
    };
    return new LazyVirtual(view, this);
  }

  parsed() {
    return this.items.filter((item) => item.el).length;
  }

  // The minimap's nodes, from the text.
  draw(ctx, h, sx, sy) {
    for (const item of this.items) {
      if (!item.node) continue;
      const b = item.box;
      ctx.fillStyle = item.fill && item.fill !== "none" ? item.fill : "#9e9e9e";
      ctx.fillRect((b.x - h.x) * sx, (b.y - h.y) * sy, Math.max(b.w * sx, 1.5), Math.max(b.h * sy, 1.5));
    }
  }

  constructor(shell, open, items) {
    this.svg = parseSvg(shell);
    this.open = open;
    this.items = items;
    this.graph = this.svg.querySelector(":scope > g");
    const holders = this.graph ? [...this.graph.childNodes].filter((n) => n.nodeType === 8) : [];
    if (holders.length !== items.length) throw new Error("gradviz: the replay's SVG did not split");
    this.owner = new Map();
    const m = matrixTo(this.graph, this.svg);
    items.forEach((item, i) => {
      item.ph = holders[i];
      item.el = null;
      item.on = false;
      const [x0, y0, x1, y1] = item.raw;
      if (x0 === Infinity) item.box = { x: 0, y: 0, w: 0, h: 0 };
      else {
        // the two corners through the graph's transform (m.transformPoint, written out)
        const px = m.a * x0 + m.c * y0 + m.e;
        const py = m.b * x0 + m.d * y0 + m.f;
        const qx = m.a * x1 + m.c * y1 + m.e;
        const qy = m.b * x1 + m.d * y1 + m.f;
        item.box = { x: Math.min(px, qx), y: Math.min(py, qy), w: Math.abs(qx - px), h: Math.abs(qy - py) };
      }
      for (const id of item.ids) if (id) this.owner.set(id, item);
    });
    this.onParse = () => {};
  }

  // Parse these items (one DOMParser call for all), sanitized; each gets its element.
  parse(items) {
    const todo = items.filter((item) => !item.el);
    if (!todo.length) return;
    const doc = new DOMParser().parseFromString(`${this.open}${todo.map((i) => i.text).join("")}</svg>`, "image/svg+xml");
    const svg = doc.documentElement;
    if (!svg || svg.nodeName !== "svg" || svg.children.length !== todo.length) {
      throw new Error("gradviz: the replay's SVG did not parse");
    }
    sanitize(svg);
    document.adoptNode(svg);
    const els = [...svg.children];
    todo.forEach((item, i) => {
      item.el = els[i];
      item.el.remove();
      this.onParse(item);
    });
  }

  // DOT names -> ids, and each name's neighbours, from the titles (as Geometry.index).
  names(graphId) {
    const byName = new Map();
    const neighbours = new Map();
    const link = (a, b) => {
      if (!neighbours.has(a)) neighbours.set(a, []);
      neighbours.get(a).push(b);
    };
    for (const item of this.items) {
      const id = item.ids[0] || "";
      if (item.node) {
        const name = item.title !== null ? item.title : id.startsWith(`${graphId}_`) ? id.slice(graphId.length + 1) : null;
        if (name) byName.set(name, id);
        continue;
      }
      let ends = [];
      if (item.title !== null) ends = item.title.split("->");
      else if (id.startsWith(`${graphId}_fe_`)) ends = id.slice(graphId.length + 4).split("_");
      if (ends.length !== 2) continue;
      const [a, b] = ends.map((e) => e.split(":")[0]);
      link(a, b);
      link(b, a);
    }
    return { byName, neighbours };
  }
}

// Geometry.around for a lazy view: its names lead to ids, parsed on use.
function lazyAround(el) {
  const name = dotName(el, this.svg);
  const names = name ? this.neighbours.get(name) || [] : [];
  return names.map((n) => this.byName.get(n) && this.ids.get(this.byName.get(n))).filter(Boolean);
}

// Virtual over unparsed nodes and edges: those that come near are parsed together, then placed.
class LazyVirtual extends Virtual {
  constructor(view, lazy) {
    super(view, []);
    this.view = view;
    this.lazy = lazy;
    this.items = lazy.items;
    this.attached = 0;
  }

  // A download without parsing the view: the view cloned as it stands, each unparsed
  // node or edge a marker in its place; text() writes their text there, with the classes of
  // the step shown (a download used to parse every element first: ~0.4 s at 3,000 nodes).
  snapshot() {
    const lazy = this.lazy;
    const view = this.view;
    lazy.parse(lazy.items.filter((item) => !item.el && UNSAFE.test(item.text))); // sanitized
    const holders = new Map(lazy.items.map((item, i) => [item.ph, i]));
    const clone = view.svg.cloneNode(true);
    const graph = clone.querySelector(":scope > g");
    const copies = graph ? [...graph.childNodes] : [];
    [...lazy.graph.childNodes].forEach((node, k) => {
      const i = holders.get(node);
      if (i === undefined) return;
      const item = lazy.items[i];
      copies[k].replaceWith(item.el ? item.el.cloneNode(true) : document.createComment(`gv:${i}`));
    });
    const unparsed = (_, i) => classedText(lazy.items[Number(i)].text, view.current);
    return { clone, text: (serialized) => serialized.replace(/<\x21--gv:(\d+)-->/g, unparsed) };
  }

  fill(region) {
    const near = (b) =>
      !region || (b.x <= region.x + region.w && b.x + b.w >= region.x && b.y <= region.y + region.h && b.y + b.h >= region.y);
    this.lazy.parse(this.items.filter((item) => !item.el && near(item.box))); // one parse for all
    super.fill(region);
  }
}

// A view's ids when its nodes and edges are parsed lazily: get() parses what it returns,
// peek() does not (undefined: no such id here; null: not parsed yet).
class LazyIds {
  constructor(shell, lazy) {
    this.shell = shell;
    this.lazy = lazy;
  }

  get size() {
    return this.shell.size + this.lazy.owner.size;
  }

  peek(id) {
    const el = this.shell.get(id);
    if (el) return el;
    const item = this.lazy.owner.get(id);
    if (!item) return undefined;
    return item.el ? this.find(item, id) : null;
  }

  // Parse the items of these ids together (one DOMParser call instead of one each).
  want(ids) {
    const items = ids.map((id) => this.lazy.owner.get(id)).filter((item) => item && !item.el);
    if (items.length) this.lazy.parse(items);
  }

  get(id) {
    const item = this.shell.has(id) ? null : this.lazy.owner.get(id);
    if (item && !item.el) this.lazy.parse([item]);
    return this.peek(id) || undefined;
  }

  find(item, id) {
    if (item.el.id === id) return item.el;
    return item.el.querySelector(`[id="${CSS.escape(id)}"]`) || undefined;
  }
}

