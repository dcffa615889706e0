// The diff of two runs (data.diff, a diff page): nodes in one run only marked, the panel
// has both runs' norms and their ratio, and "First difference" (key d) jumps to the first
// step that differs.

import { button, element } from "../dom.js";
import { formatNorm, infoRow, ranAt, useKey } from "./common.js";

export default class DiffOverlay {
  constructor(ctx) {
    this.ctx = ctx;
    const d = (this.d = ctx.data.diff);
    this.button = button("First difference", "Jump to the first step whose gradient differs between the runs (d)", () => this.jump());
    this.button.classList.add("gv-first-diff");
    this.button.disabled = d.first === null;
    ctx.bar.append(this.button);
    this.marked = new WeakSet();
  }

  jump() {
    if (this.d.first !== null) this.ctx.go(this.d.first);
  }

  key(event) {
    return useKey(event, "d", () => this.jump());
  }

  update(view, index, parts) {
    if (!view) return;
    const p = this.ctx.prefix;
    if (!this.marked.has(view.svg)) {
      for (const [list, cls] of [[this.d.only_a, "gv-only-a"], [this.d.only_b, "gv-only-b"]]) {
        for (const node of list) view.byId.get(`${p}_${node}`)?.classList.add(cls);
      }
      this.marked.add(view.svg);
    }
    for (const [node, [, , same]] of Object.entries(this.d.nodes)) {
      const ran = ranAt(this.ctx, node);
      view.byId.get(`${p}_${node}`)?.classList.toggle("gv-diff-changed", !same && ran !== null && ran <= index);
    }
    if (index < 0) return;
    const box = element("div", "gv-diff");
    box.append(element("div", "gv-section", "A vs B"));
    const node = (this.ctx.data.steps[index] || {}).node;
    const change = node ? this.d.nodes[node] : null;
    if (change) {
      const [a, b, same, stepB] = change;
      box.append(infoRow("‖sent‖ in A", formatNorm(a)));
      box.append(infoRow(`‖sent‖ in B${stepB === null ? " (did not run)" : `, step ${stepB}`}`, formatNorm(b)));
      const ratio = a ? b / a : null;
      const r = infoRow("‖B‖ / ‖A‖", ratio === null || b === null ? "n/a" : ratio.toPrecision(4));
      r.classList.add("gv-diff-ratio");
      box.append(r);
      box.append(element("p", same ? "gv-note" : "gv-warning", same ? "same gradient in both runs" : "the gradient differs"));
    } else if (node && this.d.only_a.includes(node)) {
      box.append(element("p", "gv-warning", "only in A: this node has no counterpart in B"));
    }
    if (index === this.d.first) box.append(element("p", "gv-warning gv-diff-first", "first difference"));
    const summary = `${this.d.only_a.length} only in A, ${this.d.only_b.length} only in B (dashed); ` +
      (this.d.first === null ? "no gradient differs" : `first difference at step ${this.d.first}`);
    box.append(element("p", "gv-note", summary));
    parts.push(box);
  }
}
