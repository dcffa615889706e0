// The gradient health overlay (data.health: log10 of each scheduled edge's gradient norm
// and the per-module norms): the toggle (key h) draws each edge that carried a gradient by
// its width and its band's colour (vanishing / healthy / exploding) and shows the
// per-module strip beside the graph (the module the active node runs in shaded, one
// receiving its gradients now outlined).

import { element } from "../dom.js";
import { toggleButton, useKey } from "./common.js";

const BANDS = ["vanishing", "healthy", "exploding", "zero", "nonfinite"];

export default class HealthOverlay {
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
