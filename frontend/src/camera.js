// The camera: which part of a view's SVG is on screen (view.box). Each step pans (and zooms
// where needed) so the active node and its neighbours are on screen with text at least
// MIN_TEXT_PX tall; panning or zooming by hand pauses it, the Follow button resumes it.
// The arithmetic is in plain functions (placement, focusBox, boxAround), tested under Node.

import { union } from "./geometry.js";

export const MIN_TEXT_PX = 12; // the camera never shows node text smaller than this
export const NODE_FONT = 11; // Graphviz points (SVG user units) of node labels, as gradviz draws them
export const MAX_SCALE = 1.6; // and never zooms in further than this (CSS px per SVG unit)
const PAD = 24; // SVG units around what the camera brings on screen

// The smallest scale (CSS px per SVG unit) at which text of `font` SVG units is `px` tall.
export function readableScale(px = MIN_TEXT_PX, font = NODE_FONT) {
  return px / font;
}

// Presentation mode's smallest text (CSS px): 20 px on a 1080-line screen, 16 px at 720.
export function presentTextPx(screenHeight) {
  return Math.min(20, Math.max(16, screenHeight / 54));
}

// How far the camera zooms in at most: MAX_SCALE, or somewhat past readable where that is more.
export function maxScale(readable) {
  return Math.max(MAX_SCALE, readable * 1.25);
}

// `box` moved inside `home` along each axis it is smaller in, centred on it along the others:
// the camera never shows blank space beside a graph that is bigger than the screen.
export function clampInto(box, home) {
  const along = (at, len, from, span) => (len >= span ? from + (span - len) / 2 : Math.min(Math.max(at, from), from + span - len));
  return { ...box, x: along(box.x, box.w, home.x, home.w), y: along(box.y, box.h, home.y, home.h) };
}

// CSS px per SVG unit when `box` fills a canvas of `size` (preserveAspectRatio meet).
export function scaleFor(box, size) {
  return Math.min(size.width / box.w, size.height / box.h);
}

// The transform that shows `box` of a view whose SVG starts at `home` in a canvas of `size`
// (CSS px), centred as "meet" did: scale s, then translate (tx, ty).
export function placement(box, home, size) {
  const s = scaleFor(box, size);
  const tx = (size.width - box.w * s) / 2 - (box.x - home.x) * s;
  const ty = (size.height - box.h * s) / 2 - (box.y - home.y) * s;
  return { s, tx, ty };
}

// A box of the canvas's aspect at `scale`, centred on (cx, cy).
export function boxAround(cx, cy, scale, size) {
  const w = size.width / scale;
  const h = size.height / scale;
  return { x: cx - w / 2, y: cy - h / 2, w, h };
}

// Where the camera goes to bring `target` (and `near`, as many as fit) on screen, readable,
// from `now`; null where it stays put (they already are: stepping inside a region does not jitter).
// `home` (what the view draws), where given, keeps the box inside the graph.
export function focusBox(now, target, near, size, readable = readableScale(), home = null) {
  const region = union([target, ...near]);
  const want = padded(region);
  const scale = scaleFor(now, size);
  const most = maxScale(readable);
  const inside = (b) => b.x >= now.x && b.y >= now.y && b.x + b.w <= now.x + now.w && b.y + b.h <= now.y + now.h;
  if (scale >= readable - 1e-6 && inside(target) && inside(want)) return null;
  let fit = Math.min(scaleFor(want, size), most);
  if (fit < readable) fit = readable; // too wide to show whole: the active node wins
  // never zoom out further than showing the region needs (stepping does not pump the zoom)
  fit = Math.max(fit, Math.min(scale, most, scaleFor(want, size)));
  const centre = fit > scaleFor(want, size) + 1e-6 ? target : want;
  const box = boxAround(centre.x + centre.w / 2, centre.y + centre.h / 2, fit, size);
  return home ? clampInto(box, padded(home)) : box;
}

// The box that frames `region` (what is drawn so far) centred, as large as readable text
// allows; where even the largest readable box cannot hold it, the `newest` boxes (what the
// last op made), or where they do not fit together either, the first of them, and as much of
// the region around as fits. Forward frames grow the graph this way.
export function frameBox(region, newest, size, readable = readableScale()) {
  const want = padded(region);
  const fit = Math.min(scaleFor(want, size), maxScale(readable));
  if (fit >= readable - 1e-6 || !newest.length) {
    return boxAround(want.x + want.w / 2, want.y + want.h / 2, fit, size);
  }
  const together = union(newest);
  const target = scaleFor(together, size) >= readable ? together : newest[0];
  const box = boxAround(target.x + target.w / 2, target.y + target.h / 2, readable, size);
  return clampInto(box, want);
}

function padded(b) {
  return { x: b.x - PAD, y: b.y - PAD, w: b.w + 2 * PAD, h: b.h + 2 * PAD };
}

// The box a view opens on: null (the whole view) where that is readable, else readable at its top.
export function startBox(home, size, readable = readableScale()) {
  if (scaleFor(home, size) >= readable) return null;
  const b = boxAround(home.x + home.w / 2, 0, readable * 1.1, size);
  b.y = home.y;
  return clampInto(b, home);
}

// A zoom by `factor` about (x, y), the centre of `box` by default.
export function zoomed(box, factor, x = box.x + box.w / 2, y = box.y + box.h / 2) {
  return { x: x - (x - box.x) * factor, y: y - (y - box.y) * factor, w: box.w * factor, h: box.h * factor };
}

// A point of the canvas (CSS px from its top left) in the view's SVG units.
export function canvasToGraph(view, px, py) {
  const p = view.placed || { s: 1, tx: 0, ty: 0 };
  return [view.home.x + (px - p.tx) / p.s, view.home.y + (py - p.ty) / p.s];
}

// The camera over the shown view (view.box, drawn by View.showBox); it follows the active
// node unless the user moved the view by hand.
export class Camera {
  constructor(canvas, onMove) {
    this.canvas = canvas;
    this.onMove = onMove;
    this.following = true;
    this.view = null;
    this.textPx = MIN_TEXT_PX; // the smallest text it shows (presentation mode raises it)
    this.font = NODE_FONT; // ... of this size, in SVG units (presentation: the view's smallest)
    this.size = null; // the canvas's CSS size, kept by a ResizeObserver (no layout per step)
    this.resized = null; // what a new size does, where more than placing the same box again
    if (window.ResizeObserver) {
      this.observer = new ResizeObserver((entries) => {
        const r = entries[entries.length - 1].contentRect;
        if (r.width && r.height) this.size = { width: r.width, height: r.height };
        if (this.resized) this.resized();
        else if (this.view && this.size) this.view.showBox(this.size);
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

  // CSS px per SVG unit when `box` fills the canvas.
  scaleFor(box) {
    return scaleFor(box, this.rect());
  }

  // The smallest scale at which node text is readable.
  static readable() {
    return readableScale();
  }

  // ... for this camera: presentation mode asks for larger text than the notebook.
  readable() {
    return readableScale(this.textPx, this.font);
  }

  set(box) {
    this.view.box = box;
    this.view.showBox(this.rect());
    this.onMove();
  }

  // Bring `target` (and `near`, as many as fit) on screen, readable.
  focus(geometry, target, near) {
    if (!this.following || !target || !this.view) return;
    const boxes = near.map((n) => geometry.box(n));
    const drawn = geometry.content(this.view.home);
    const box = focusBox(this.view.box, geometry.box(target), boxes, this.rect(), this.readable(), drawn);
    if (box) this.set(box);
  }

  // Frame `region` (what a forward frame has drawn so far), keeping `newest` on screen.
  frame(region, newest) {
    if (!this.following || !region || !this.view) return;
    this.set(frameBox(region, newest, this.rect(), this.readable()));
  }

  // On showing a view: fit it when that is readable, else start readable at its top.
  start(view) {
    this.view = view;
    const box = startBox(view.home, this.rect(), this.readable());
    if (box) this.set(box);
  }
}
