// The overview of a big view: every node as a small rectangle on a canvas, the visible part
// framed; clicking it moves the camera there.

import { element } from "./dom.js";

// The overview: every node of the view as a small rectangle on a canvas (no image to load,
// nothing per node in the DOM), the visible part framed, the active node marked. Clicking it
// centres the camera there.
export class Minimap {
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
    // drawn after the first frame: a big graph's thousands of boxes wait for the page
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
