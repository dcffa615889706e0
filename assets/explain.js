// gradviz stepper, explanations (#18): memory, gradient health and the diff of two runs.
//
// Appended to the stepper's main module (same scope: element, button, extend) where the data has
// them: the offline page inlines this file only then, the notebook widget always. The data
// comes from gradviz/replay/overlays.py as compact arrays:
// - data.memory: saved bytes per node, and per step what is freed, in flight and in .grad;
//   the toggle (key m) labels each node with its saved bytes, strikes them once the node
//   ran (backward frees them), and the panel shows the running total, its peak and a
//   sparkline, and why a second backward() fails without retain_graph=True;
// - data.health: log10 of each scheduled edge's gradient norm and the per-module norms; the
//   toggle (key h) draws each edge that carried a gradient by its width and its band's
//   colour (vanishing / healthy / exploding) and shows the per-module strip beside the graph
//   (the module the active node runs in shaded, one receiving its gradients now outlined);
// - data.diff (a diff page): nodes in one run only marked, the panel has both runs' norms
//   and their ratio, and "First difference" (key d) jumps to the first step that differs.
// - data.optimizer (an optimizer step's page, gradviz/replay/optstep.py): at the last step,
//   the optimizer.step() that followed the backward (button, key s): per parameter ‖w‖
//   before and after, ‖Δw‖, update/weight, the gradient and optimizer state it used, the
//   hyper-parameters and the update rule; the parameters' leaf boxes are marked there.
// Each part is a class with update(view, index), key(event) and the panel rows it adds.

function formatBytes(count) {
  let value = count;
  for (const unit of ["B", "KiB", "MiB", "GiB"]) {
    if (value < 1024 || unit === "GiB") return unit === "B" ? `${count} B` : `${value.toFixed(1)} ${unit}`;
    value /= 1024;
  }
  return `${count} B`;
}

function formatNorm(norm) {
  return norm === null || norm === undefined ? "n/a" : Number(norm).toPrecision(4);
}

function infoRow(key, value, bytes) {
  const r = element("div", "gv-row");
  const v = element("span", "gv-value", value);
  if (bytes !== undefined) v.dataset.bytes = String(bytes);
  r.append(element("span", "gv-key", key), v);
  return r;
}

function toggleButton(label, title, onClick) {
  const b = button(label, title, onClick);
  b.classList.add("gv-toggle");
  b.setAttribute("aria-pressed", "false");
  return b;
}

function useKey(event, wanted, action) {
  if (event.key !== wanted) return false;
  event.preventDefault();
  action();
  return true;
}

// The step each node ran at (null: it did not), by node id.
function ranAt(ctx, node) {
  const ran = ctx.data.schedule.nodes[`${ctx.prefix}_${node}`];
  return ran === undefined ? null : ran;
}

// -- memory ------------------------------------------------------------------------------
class MemoryOverlay {
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

// -- gradient health -----------------------------------------------------------------------
const BANDS = ["vanishing", "healthy", "exploding", "zero", "nonfinite"];

class HealthOverlay {
  constructor(ctx) {
    this.ctx = ctx;
    const h = (this.h = ctx.data.health);
    this.on = false;
    const ids = Object.keys(ctx.data.schedule.edges);
    this.edges = ids.map((id, i) => [id, ctx.data.schedule.edges[id], h.edges[i]]);
    const logs = h.edges.filter((v) => typeof v === "number");
    this.lo = logs.length ? Math.min(...logs) : 0;
    this.hi = logs.length ? Math.max(...logs) : 0;
    this.button = toggleButton("Health", "Gradient health: edge width and colour by log10‖g‖, per-module norms (h)", () => this.toggle());
    this.button.classList.add("gv-health-btn");
    ctx.tools.append(this.button);
    this.painted = new Map(); // view -> Map(edge id -> the band it shows)
    this.strip = element("div", "gv-health-strip");
    this.strip.hidden = true;
    ctx.main.insertBefore(this.strip, ctx.panel);
    this.rows = [];
    const head = element("div", "gv-section", `‖g‖ per ${h.by || "module"}`);
    const legend = element("div", "gv-health-legend", `vanishing < 1e${h.v} · exploding > 1e${h.x}`);
    this.strip.append(head, legend);
    const mlogs = h.modules.flatMap(([, s]) => s.map(([, v]) => v)).filter((v) => v > 0).map(Math.log10);
    this.mlo = mlogs.length ? Math.min(...mlogs) : 0;
    this.mhi = mlogs.length ? Math.max(...mlogs) : 0;
    if (!h.modules.length) {
      this.strip.append(element("p", "gv-note gv-health-none",
        "No named leaf got a gradient: record with params=model or names={...} to follow their norms here."));
    }
    for (const [name, series] of h.modules) {
      const r = element("div", "gv-health-row");
      r.dataset.module = name;
      const label = element("span", "gv-health-name", name.length > 16 ? `…${name.slice(-15)}` : name);
      label.title = name;
      const track = element("span", "gv-health-track");
      const bar = element("span", "gv-health-bar");
      track.append(bar);
      const value = element("span", "gv-health-value");
      r.append(label, track, value);
      this.strip.append(r);
      this.rows.push({ r, bar, value, series });
    }
  }

  band(log) {
    if (log === "z") return "zero";
    if (log === "n") return "nonfinite";
    if (typeof log !== "number") return null;
    if (log < this.h.v) return "vanishing";
    return log > this.h.x ? "exploding" : "healthy";
  }

  toggle() {
    this.on = !this.on;
    this.button.setAttribute("aria-pressed", String(this.on));
    this.button.classList.toggle("gv-on", this.on);
    this.ctx.root.classList.toggle("gv-show-health", this.on);
    this.strip.hidden = !this.on;
    if (!this.on) for (const view of this.painted.keys()) this.paint(view, -Infinity);
    this.ctx.render();
  }

  key(event) {
    return useKey(event, "h", () => this.toggle());
  }

  // Edges that carried their gradient by `index`: width by log10‖g‖, colour by band. Only
  // the edges whose band changed since the last paint of this view touch the DOM.
  paint(view, index) {
    if (!this.painted.has(view)) this.painted.set(view, new Map());
    const shown = this.painted.get(view);
    for (const [id, at, log] of this.edges) {
      const el = view.byId.get(id);
      if (!el) continue;
      const band = at <= index ? this.band(log) : null;
      if ((shown.get(id) || null) === band) continue;
      shown.set(id, band);
      for (const b of BANDS) el.classList.toggle(`gv-h-${b}`, band === b);
      const path = el.querySelector("path");
      if (band && typeof log === "number") {
        const width = this.hi > this.lo ? 0.6 + (4.4 * (log - this.lo)) / (this.hi - this.lo) : 2;
        if (path) path.style.strokeWidth = `${width.toFixed(2)}px`;
        el.dataset.log10 = String(log);
      } else {
        if (path) path.style.strokeWidth = "";
        delete el.dataset.log10;
      }
    }
  }

  update(view, index, parts) {
    if (!this.on || !view) return;
    this.paint(view, index);
    // the module the active node runs in (under watch(model)): its rows, and those inside it
    const path = index >= 0 ? String((this.ctx.data.steps[index] || {}).module || "").split(" (")[0] : "";
    for (const row of this.rows) {
      let norm = null;
      for (const [step, value] of row.series) if (step <= index) norm = value;
      const name = row.r.dataset.module;
      const here = path !== "" && (name === path || name.startsWith(`${path}.`) || path.startsWith(`${name}.`));
      row.r.classList.toggle("gv-h-here", here);
      row.r.classList.toggle("gv-h-active", row.series.some(([step]) => step === index));
      row.r.classList.toggle("gv-h-none", norm === null);
      row.value.textContent = norm === null ? "—" : Number(norm).toExponential(2);
      row.value.dataset.norm = norm === null ? "" : String(norm);
      const log = norm > 0 ? Math.log10(norm) : this.mlo;
      const span = this.mhi > this.mlo ? (log - this.mlo) / (this.mhi - this.mlo) : 1;
      row.bar.style.width = norm === null ? "0" : `${Math.round(8 + 92 * span)}%`;
      row.bar.className = `gv-health-bar gv-h-${this.band(norm > 0 ? Math.log10(norm) : "z") || "healthy"}`;
    }
    if (index <= 0) return;
    const sent = this.edges.filter(([, at]) => at === index);
    if (!sent.length) return;
    const box = element("div", "gv-health");
    box.append(element("div", "gv-section", "gradient health"));
    const items = sent.map(([, , log]) => {
      const band = this.band(log) || "unknown";
      return typeof log === "number" ? `log10‖g‖ = ${log.toFixed(2)} (${band})` : band;
    });
    const ul = element("ul", "gv-list");
    for (const item of items) ul.append(element("li", "", item));
    box.append(ul);
    parts.push(box);
  }
}

// -- the diff of two runs --------------------------------------------------------------------
class DiffOverlay {
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

// -- the optimizer step ---------------------------------------------------------------------
// A parameter's row: [name, box, group, ‖w‖, ‖w'‖, ‖Δw‖, ratio, ‖g‖, accumulated, g, Δw,
// state before, state after] (gradviz/replay/optstep.py).
const OPT_OPEN_MAX = 8; // above this many parameters each is a one-line <details>

class OptimizerPanel {
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

extend((ctx) => {
  const parts = [];
  if (ctx.data.diff) parts.push(new DiffOverlay(ctx));
  if (ctx.data.memory) parts.push(new MemoryOverlay(ctx));
  if (ctx.data.health) parts.push(new HealthOverlay(ctx));
  if (ctx.data.optimizer) parts.push(new OptimizerPanel(ctx));
  return parts.length ? parts : null;
});
