// The optimizer step (data.optimizer, an optimizer step's page, gradviz/replay/optstep.py):
// at the last step, the optimizer.step() that followed the backward (button, key s): per
// parameter ‖w‖ before and after, ‖Δw‖, update/weight, the gradient and optimizer state it
// used, the hyper-parameters and the update rule; the parameters' leaf boxes are marked there.

import { button, element } from "../dom.js";
import { formatNorm, infoRow, useKey } from "./common.js";

// A parameter's row: [name, box, group, ‖w‖, ‖w'‖, ‖Δw‖, ratio, ‖g‖, accumulated, g, Δw,
// state before, state after] (gradviz/replay/optstep.py).
const OPT_OPEN_MAX = 8; // above this many parameters each is a one-line <details>

export default class OptimizerPanel {
  constructor(ctx) {
    this.ctx = ctx;
    this.o = ctx.data.optimizer;
    this.last = ctx.data.steps.length - 1;
    this.button = button("optimizer.step()", "After the last backward step: what optimizer.step() did to each parameter (s)", () => this.show());
    this.button.classList.add("gv-opt-btn");
    ctx.bar.append(this.button);
    this.marked = new WeakMap(); // svg -> whether its parameter boxes are marked
  }

  show() {
    this.ctx.go(this.last);
    const panel = this.ctx.panel; // scroll the panel (not the page) to the section
    const box = panel.querySelector(".gv-optstep");
    if (box && panel.scrollHeight > panel.clientHeight) panel.scrollTop = box.offsetTop - panel.offsetTop;
  }

  key(event) {
    return useKey(event, "s", () => this.show());
  }

  update(view, index, parts) {
    const here = index === this.last;
    this.button.classList.toggle("gv-on", here);
    if (view && this.marked.get(view.svg) !== here) {
      for (const item of this.o.params) {
        if (item[1]) view.byId.get(`${this.ctx.prefix}_${item[1]}`)?.classList.toggle("gv-opt-param", here);
      }
      this.marked.set(view.svg, here);
    }
    if (here) parts.push(this.panel());
  }

  panel() {
    const o = this.o;
    const box = element("div", "gv-optstep");
    box.append(element("div", "gv-section", `then ${o.optimizer}.step()`));
    if (o.rule) box.append(element("p", "gv-note gv-opt-rule", `rule: ${o.rule}`));
    o.groups.forEach((group, i) => {
      const text = group.map(([k, v]) => `${k}=${v}`).join(", ");
      const r = infoRow(o.groups.length > 1 ? `group ${i}` : "settings", text);
      r.classList.add("gv-opt-hyper");
      box.append(r);
    });
    box.append(element("p", "gv-note", o.accumulated
      ? "Some .grad held a gradient before this backward (no zero_grad()): the step used the sum (accumulation)."
      : "Every .grad was empty before this backward: the step used this loss's gradients alone."));
    for (const p of o.params) box.append(this.param(p));
    box.append(element("p", "gv-note", "After step(), .grad still holds these gradients: optimizer.zero_grad() before the next backward, or it adds to them."));
    return box;
  }

  param([name, , , w, after, dw, ratio, g, accumulated, grad, update, before, stateAfter]) {
    // many parameters (a GPT): one line each, opened on demand
    const many = this.o.params.length > OPT_OPEN_MAX;
    const item = element(many ? "details" : "div", "gv-opt-item");
    item.dataset.param = name;
    const ratioText = ratio === null ? "" : `  Δw/w ${Number(ratio).toExponential(1)}`;
    item.append(element(many ? "summary" : "div", "gv-opt-name", many ? `${name}${ratioText}` : name));
    if (grad === null) {
      item.append(element("p", "gv-note", ".grad is None: the optimizer skipped it (unchanged)"));
      return item;
    }
    const rows = [
      ["‖w‖ before → after", `${formatNorm(w)} → ${formatNorm(after)}`, "gv-opt-w", { w, after }],
      ["‖Δw‖", formatNorm(dw), "gv-opt-dw", { dw }],
      ["update / weight", ratio === null ? "n/a (zero weight)" : Number(ratio).toExponential(2), "gv-opt-ratio", { ratio }],
      [accumulated ? "‖g‖ (accumulated)" : "‖g‖", formatNorm(g), "gv-opt-g", { g }],
      ["g", grad, "gv-opt-grad", {}],
      ["Δw", update, "gv-opt-update", {}],
    ];
    for (const [key, value, cls, numbers] of rows) {
      const r = infoRow(key, value);
      r.classList.add(cls);
      for (const [k, v] of Object.entries(numbers)) r.lastChild.dataset[k] = v === null ? "" : String(v);
      item.append(r);
    }
    const state = (key, values, cls) => {
      const r = infoRow(key, values.length ? values.map(([k, v]) => `${k} ${v}`).join("; ") : "none yet (first step)");
      r.classList.add(cls);
      item.append(r);
    };
    state("state used", before, "gv-opt-before");
    state("state after", stateAfter, "gv-opt-after");
    return item;
  }
}

