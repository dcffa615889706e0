// The stepper's "Run to" control: a menu of breakpoints (next NaN / Inf, next norm above or
// below a threshold, next step in a module, next node of a type), the field each needs, and
// a Run button; each breakpoint also has a key (keys.js, RUN_KEYS). The search itself is in
// breakpoints.js. `stepper` gives current() and go(index).

import { Breakpoints } from "./breakpoints.js";
import { button, element } from "./dom.js";
import { runAction } from "./keys.js";

const KINDS = [
  ["nonfinite", "next NaN / Inf"],
  ["above", "next norm above…"],
  ["below", "next norm below…"],
  ["module", "next in module…"],
  ["type", "next node of type…"],
];
const ACTIVE = ""; // the module / type menus' first choice: the active node's own

export class RunTo {
  constructor(data, stepper) {
    this.bp = new Breakpoints(data);
    this.stepper = stepper;
    this.thresholds = { above: String(this.bp.above), below: String(this.bp.below) };
    this.el = element("span", "gv-runto");
    this.el.hidden = !this.bp.available;
    const label = element("span", "gv-runto-label", "Run to ");
    this.kind = element("select", "gv-runto-kind");
    this.kind.title = "Run to: next NaN / Inf (n), norm above (>) or below (<) a threshold, module (i), node type (t)";
    this.kind.setAttribute("aria-label", "Run to");
    const modules = this.bp.modulePaths();
    for (const [value, text] of KINDS) {
      if (value === "module" && !modules.length) continue; // no module data (no watch(model))
      const o = element("option", "", text);
      o.value = value;
      this.kind.append(o);
    }
    this.threshold = element("input", "gv-runto-threshold");
    this.threshold.type = "text";
    this.threshold.inputMode = "decimal";
    this.threshold.size = 7;
    this.threshold.title = "Threshold: a gradient's L2 norm";
    this.threshold.setAttribute("aria-label", "norm threshold");
    this.module = this.menu("gv-runto-module", "Module", "this node's module", modules);
    this.type = this.menu("gv-runto-type", "Node type", "this node's type", this.bp.types());
    this.go = button("Run ▸", "Run to the next step that meets the breakpoint", () => this.run());
    this.go.classList.add("gv-runto-go");
    this.status = element("span", "gv-runto-status");
    this.status.setAttribute("aria-live", "polite");
    this.el.append(label, this.kind, this.threshold, this.module, this.type, this.go, this.status);
    this.shown = this.kind.value;
    this.kind.addEventListener("change", () => this.choose(this.kind.value));
    this.threshold.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        this.run();
      }
    });
    this.choose(this.kind.value);
  }

  menu(className, title, first, values) {
    const select = element("select", className);
    select.title = title;
    select.setAttribute("aria-label", title);
    const own = element("option", "", first);
    own.value = ACTIVE;
    select.append(own);
    for (const value of values) {
      const o = element("option", "", value);
      o.value = value;
      select.append(o);
    }
    return select;
  }

  // Show the field the breakpoint needs; each threshold keeps its own number.
  choose(kind) {
    if (this.shown === "above" || this.shown === "below") this.thresholds[this.shown] = this.threshold.value;
    this.kind.value = kind;
    this.shown = kind;
    const norm = kind === "above" || kind === "below";
    if (norm) this.threshold.value = this.thresholds[kind];
    this.threshold.hidden = !norm;
    this.module.hidden = kind !== "module";
    this.type.hidden = kind !== "type";
  }

  // A key of RUN_KEYS: choose its breakpoint and run to it. Returns whether it was one.
  key(event) {
    const kind = runAction(event.key);
    if (kind === null || !this.bp.available) return false; // a page without breakpoint data
    if (![...this.kind.options].some((o) => o.value === kind)) return false; // i: no modules
    event.preventDefault();
    this.choose(kind);
    this.run();
    return true;
  }

  // The breakpoint's argument (a threshold, a module path, a type), or an error to show.
  argument(kind, at) {
    if (kind === "above" || kind === "below") {
      const text = this.threshold.value.trim();
      const value = Number(text);
      if (!text || Number.isNaN(value) || value < 0) return { error: "type a norm (a number ≥ 0)" };
      return { value };
    }
    if (kind === "module") {
      const value = this.module.value || this.bp.moduleOf(at);
      return value ? { value } : { error: "this step runs in no module: choose one" };
    }
    if (kind === "type") {
      const step = this.bp.steps[at];
      const value = this.type.value || (at > 0 && step ? step.type : null);
      return value ? { value } : { error: "choose a node type" };
    }
    return { value: null };
  }

  run() {
    const at = this.stepper.current();
    const kind = this.kind.value;
    const arg = this.argument(kind, at);
    if (arg.error) return this.say(arg.error, "error");
    const found = this.bp.next(at, kind, arg.value);
    if (found === null) {
      const where = at > 0 ? `after step ${at}` : "in the backward pass";
      return this.say(`none ${where}`, "none");
    }
    this.say("", "found");
    this.stepper.go(found);
  }

  say(text, outcome) {
    this.status.textContent = text;
    this.el.dataset.outcome = outcome;
  }
}
