// The memory overlay (data.memory: saved bytes per node, and per step what is freed, in
// flight and in .grad): the toggle (key m) labels each node with its saved bytes, strikes
// them once the node ran (backward frees them), and the panel shows the running total, its
// peak and a sparkline, and why a second backward() fails without retain_graph=True.

import { element } from "../dom.js";
import { formatBytes, infoRow, ranAt, toggleButton, useKey } from "./common.js";

export default class MemoryOverlay {
  constructor(ctx) {
    this.ctx = ctx;
    const m = (this.m = ctx.data.memory);
    this.on = false;
    this.saved = [];
    this.grads = [];
    this.total = [];
    const freed = new Map(m.freed);
    let held = m.saved;
    let grads = 0;
    let g = 0;
    for (let i = 0; i < ctx.data.count; i++) {
      held -= freed.get(i) || 0;
      while (g < m.grads.length && m.grads[g][0] <= i) grads = m.grads[g++][1];
      this.saved.push(held);
      this.total.push(held + (m.flight[i] || 0) + grads);
      this.grads.push(grads);
    }
    this.freed = freed;
    this.button = toggleButton("Memory", "Saved tensors: the bytes each node holds, freed as backward passes (m)", () => this.toggle());
    this.button.classList.add("gv-memory-btn");
    ctx.tools.append(this.button);
    this.badges = new WeakMap(); // svg -> [[node element, badge]]
  }

  toggle() {
    this.on = !this.on;
    this.button.setAttribute("aria-pressed", String(this.on));
    this.button.classList.toggle("gv-on", this.on);
    this.ctx.root.classList.toggle("gv-show-memory", this.on);
    this.ctx.render();
  }

  key(event) {
    return useKey(event, "m", () => this.toggle());
  }

  // Each node that saved tensors gets a badge with its bytes (once per view).
  decorate(view) {
    if (this.badges.has(view.svg)) return this.badges.get(view.svg);
    const made = [];
    const ckpt = new Set(this.m.ckpt || []);
    for (const [node, bytes] of Object.entries(this.m.nodes)) {
      const id = `${this.ctx.prefix}_${node}`; // not parsed yet: off screen, no box (as detached)
      const el = view.byId.peek ? view.byId.peek(id) : view.byId.get(id);
      if (!el || !el.getBBox) continue;
      const box = el.getBBox();
      if (!box.width) continue;
      const badge = document.createElementNS("http://www.w3.org/2000/svg", "text");
      badge.setAttribute("class", "gv-mem-badge");
      badge.setAttribute("x", String(box.x + box.width));
      badge.setAttribute("y", String(box.y + box.height + 9));
      badge.setAttribute("text-anchor", "end");
      badge.setAttribute("font-size", "9");
      badge.dataset.bytes = String(bytes);
      badge.textContent = ckpt.has(node) ? `⟳ inputs ${formatBytes(bytes)}` : formatBytes(bytes);
      if (ckpt.has(node)) badge.classList.add("gv-mem-ckpt-badge");
      el.append(badge);
      made.push([node, el]);
    }
    this.badges.set(view.svg, made);
    return made;
  }

  update(view, index, parts) {
    if (!this.on || !view) return;
    for (const [node, el] of this.decorate(view)) {
      const ran = ranAt(this.ctx, node);
      el.classList.toggle("gv-mem-freed", !this.m.retained && ran !== null && index >= 0 && ran <= index);
    }
    if (index < 0) return;
    parts.push(this.panel(index));
  }

  panel(index) {
    const m = this.m;
    const box = element("div", "gv-memory");
    box.append(element("div", "gv-section", "memory"));
    const node = (this.ctx.data.steps[index] || {}).node;
    const ckpt = m.ckpt || [];
    const whole = m.ckpt_whole || [];
    if (node && whole.includes(node)) {
      box.append(infoRow("this node saved", `${formatBytes(m.nodes[node] || 0)}: its segment's inputs`, m.nodes[node] || 0));
      box.append(element("p", "gv-note gv-mem-ckpt",
        "torch.utils.checkpoint(use_reentrant=True): this one node is a whole segment that ran without a graph. Its backward reran the segment's forward, with a graph this time, and backpropagated through it."));
    } else if (node && ckpt.includes(node)) {
      box.append(infoRow("this node saved", "nothing of its own: checkpointed (its segment's inputs only)"));
      const note = element("p", "gv-note gv-mem-ckpt",
        "torch.utils.checkpoint: backward reran this segment's forward to recompute the tensors this node needs, used them and freed them.");
      box.append(note);
    } else if (node && m.nodes[node]) {
      const what = m.retained ? "kept (retain_graph=True)" : "freed now that it ran";
      box.append(infoRow("this node saved", `${formatBytes(m.nodes[node])}, ${what}`, m.nodes[node]));
    }
    const rows = [
      ["saved tensors", this.saved[index], "gv-mem-saved"],
      ["freed this step", this.freed.get(index) || 0, "gv-mem-step"],
      ["gradients in flight", m.flight[index] || 0, "gv-mem-flight"],
      [".grad", this.grads[index], "gv-mem-grads"],
      ["total", this.total[index], "gv-mem-total"],
      [`peak (step ${m.peak_step})`, m.peak, "gv-mem-peak"],
    ];
    for (const [key, bytes, cls] of rows) {
      const r = infoRow(key, formatBytes(bytes), bytes);
      r.classList.add(cls);
      box.append(r);
    }
    box.append(this.sparkline(index));
    const freedSoFar = m.saved - this.saved[index];
    let note;
    if (m.retained) {
      note = `retain_graph=True: the graph keeps its saved tensors (${formatBytes(m.saved)}), so backward() can run over it again.`;
    } else if (freedSoFar > 0) {
      note =
        `Backward frees each node's saved tensors once it ran (${formatBytes(freedSoFar)} of ${formatBytes(m.saved)} so far). ` +
        "A second backward() over this graph would need them and fails ('Trying to backward through the graph a second time'): " +
        "pass retain_graph=True to the first backward, or run the forward again.";
    } else {
      note = `The graph holds ${formatBytes(m.saved)} of saved tensors for backward; each node frees its own once it ran.`;
    }
    if (m.owned) note += ` ${formatBytes(m.owned)} of them belong to leaves (weights) and stay alive with them.`;
    const inside = ckpt.length - whole.length;
    if (inside > 0) {
      note += ` ${inside} nodes ran inside torch.utils.checkpoint (marked ⟳): they keep only their segment's inputs; backward recomputes the rest by running that forward again.`;
    }
    if (whole.length) {
      note += ` ${whole.length} node(s) (marked ⟳) each stand for a whole segment run by torch.utils.checkpoint(use_reentrant=True), which keeps its inputs and reruns the segment in backward.`;
    }
    box.append(element("p", "gv-note gv-mem-note", note));
    return box;
  }

  // The running total over the steps; the current step and the peak marked.
  sparkline(index) {
    const ns = "http://www.w3.org/2000/svg";
    const w = 200;
    const h = 36;
    const n = this.total.length;
    const top = Math.max(this.m.peak, 1);
    const x = (i) => (n > 1 ? (i * w) / (n - 1) : 0);
    const y = (v) => h - 2 - ((h - 4) * v) / top;
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("class", "gv-sparkline");
    svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
    svg.setAttribute("preserveAspectRatio", "none");
    const line = document.createElementNS(ns, "polyline");
    this.points = this.points || this.total.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
    line.setAttribute("points", this.points);
    line.setAttribute("class", "gv-spark-line");
    const now = document.createElementNS(ns, "line");
    now.setAttribute("class", "gv-spark-now");
    for (const [k, v] of [["x1", x(index)], ["x2", x(index)], ["y1", 0], ["y2", h]]) now.setAttribute(k, String(v));
    const peak = document.createElementNS(ns, "circle");
    peak.setAttribute("class", "gv-spark-peak");
    peak.setAttribute("cx", String(x(this.m.peak_step)));
    peak.setAttribute("cy", String(y(this.m.peak)));
    peak.setAttribute("r", "2.5");
    svg.append(line, now, peak);
    return svg;
  }
}
