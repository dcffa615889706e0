// The explorer's leaves panel (gradviz.explore; the notebook widget only, never the offline
// page): a number field per element of each small leaf, a slider for a scalar one, and
// beside each element autograd's gradient and a float64 finite difference. An edit sets the
// model's `values`; the kernel runs the user's function again and sends the new recording.
// The fields stay disabled until the kernel answers a hello: a notebook exported with its
// widget state draws the panel with no kernel behind it, and says so instead of pretending.

import { element } from "./dom.js";

const SLIDER_STEPS = 200; // a slider's resolution over its range

// A number as the panel shows it: six significant digits, no trailing noise.
export function shown(value) {
  if (value === null || value === undefined) return "None";
  if (!Number.isFinite(value)) return String(value);
  return String(Number(value.toPrecision(6)));
}

// The label of element `index` of a leaf of `shape` (a scalar: its name alone).
export function elementName(name, shape, index) {
  if (!shape.length) return name;
  const at = [];
  let rest = index;
  for (let d = shape.length - 1; d >= 0; d--) {
    at.unshift(rest % shape[d]);
    rest = Math.floor(rest / shape[d]);
  }
  return `${name}[${at.join(", ")}]`;
}

// What the check says: the finite difference, its step and dtype, and how far apart they are.
export function checkText(grad, estimate, agree) {
  if (!estimate) return "";
  const slope = grad === null || grad === undefined ? 0 : grad;
  const gap = Math.abs(slope - estimate.value);
  const mark = agree ? "agrees" : "DISAGREES";
  return (
    `finite difference ${shown(estimate.value)} (central, h = ${estimate.h.toExponential(1)}, ` +
    `${estimate.dtype}); |Δ| = ${gap.toExponential(1)}: ${mark}`
  );
}

// A slider's range around the value it starts at: ± twice its size (at least ±2).
export function sliderRange(value) {
  const span = 2 * Math.max(1, Math.abs(value));
  return { min: value - span, max: value + span, step: (2 * span) / SLIDER_STEPS };
}

export class Leaves {
  constructor(model) {
    this.model = model;
    this.el = element("div", "gv-leaves");
    this.el.dataset.gvLeaves = "";
    this.rows = new Map(); // "name/index" -> its inputs and texts
    this.sent = 0; // edits sent whose recording has not come back
    this.later = null; // the newest edit made while one was on its way
    this.el.addEventListener("keydown", (event) => event.stopPropagation()); // typed, not shortcuts
    this.onLeaves = () => this.fill();
    this.onAnswer = () => this.answered();
    this.live = false;
    this.onMessage = (content) => content && content.type === "explore-alive" && this.goLive();
    model.on("msg:custom", this.onMessage);
    model.on("change:leaves", this.onLeaves);
    model.on("change:notice", this.onLeaves);
    model.on("change:answered", this.onAnswer);
    this.build();
    try {
      model.send({ type: "explore-hello" });
    } catch {
      // no kernel to send to: the fields stay disabled
    }
  }

  goLive() {
    this.live = true;
    this.el.dataset.live = "true";
    for (const input of this.el.querySelectorAll("input")) input.disabled = false;
    this.fill();
  }

  close() {
    this.model.off("msg:custom", this.onMessage);
    this.model.off("change:leaves", this.onLeaves);
    this.model.off("change:notice", this.onLeaves);
    this.model.off("change:answered", this.onAnswer);
    this.el.remove();
  }

  leaves() {
    return this.model.get("leaves") || [];
  }

  // The rows, once per leaf (their fields keep the focus across updates), then the numbers.
  build() {
    const head = element("div", "gv-leaves-head", "leaves: edit a value, Enter runs your function again");
    this.notice = element("p", "gv-leaves-notice");
    this.timing = element("span", "gv-leaves-timing");
    this.rows.clear();
    const rows = [];
    for (const leaf of this.leaves()) {
      if (!leaf.editable) {
        const count = leaf.values.length;
        rows.push(element("div", "gv-leaf gv-leaf-fixed", `${leaf.name}: ${count} elements, too many to edit here ` +
          "(give it as smaller leaves to edit it)"));
        continue;
      }
      leaf.values.forEach((value, index) => rows.push(this.row(leaf, index, value)));
    }
    head.append(" ", this.timing);
    this.el.replaceChildren(head, ...rows, this.notice);
    this.fill();
  }

  row(leaf, index, value) {
    const r = element("div", "gv-leaf");
    const label = element("label", "gv-leaf-name", elementName(leaf.name, leaf.shape, index));
    const field = document.createElement("input");
    field.type = "number";
    field.step = "any";
    field.className = "gv-leaf-field";
    field.disabled = !this.live;
    field.dataset.leaf = leaf.name;
    field.dataset.index = String(index);
    field.setAttribute("aria-label", `value of ${label.textContent}`);
    label.htmlFor = field.id = `gv-leaf-${Math.random().toString(36).slice(2, 9)}`;
    field.addEventListener("keydown", (event) => {
      if (event.key === "Enter") this.edit(leaf.name, index, field.value);
    });
    field.addEventListener("change", () => this.edit(leaf.name, index, field.value));
    r.append(label, field);
    let slider = null;
    if (leaf.values.length === 1) {
      slider = document.createElement("input");
      slider.type = "range";
      slider.className = "gv-leaf-slider";
      slider.disabled = !this.live;
      const range = sliderRange(value);
      slider.min = String(range.min);
      slider.max = String(range.max);
      slider.step = String(range.step);
      slider.setAttribute("aria-label", `slide ${label.textContent}`);
      slider.addEventListener("input", () => {
        field.value = slider.value;
        this.edit(leaf.name, index, slider.value);
      });
      r.append(slider);
    }
    const grad = element("span", "gv-leaf-grad");
    const check = element("span", "gv-leaf-check");
    r.append(grad, check);
    this.rows.set(`${leaf.name}/${index}`, { field, slider, grad, check });
    return r;
  }

  // The numbers of the newest recording (a leaf with another shape builds the rows again).
  fill() {
    const leaves = this.leaves();
    const expected = leaves.reduce((n, leaf) => n + (leaf.editable ? leaf.values.length : 0), 0);
    if (expected !== this.rows.size || leaves.some((l) => l.editable && !this.rows.has(`${l.name}/0`))) {
      return this.build();
    }
    for (const leaf of leaves) {
      if (!leaf.editable) continue;
      leaf.values.forEach((value, index) => {
        const parts = this.rows.get(`${leaf.name}/${index}`);
        if (document.activeElement !== parts.field || Number(parts.field.value) !== value) {
          parts.field.value = shown(value);
        }
        if (parts.slider && document.activeElement !== parts.slider) parts.slider.value = String(value);
        const grad = leaf.grads[index];
        parts.grad.textContent = `∂L/∂${elementName(leaf.name, leaf.shape, index)} = ${shown(grad)}`;
        parts.grad.dataset.value = grad === null ? "" : String(grad);
        parts.check.textContent = checkText(grad, leaf.estimates[index], leaf.agree[index]);
        parts.check.classList.toggle("gv-leaf-bad", leaf.agree[index] === false);
      });
    }
    const waiting = "editing the leaves needs a running kernel: waiting for it to answer";
    const notice = this.live ? String(this.model.get("notice") || "") : waiting;
    this.notice.textContent = notice;
    this.notice.hidden = !notice;
  }

  // An element's new value: sent to the kernel, one edit at a time (the newest one waits).
  edit(name, index, text) {
    const value = Number(text);
    if (text === "" || !Number.isFinite(value)) return;
    const values = { ...(this.later || this.model.get("values") || {}) };
    const old = values[name] || [];
    if (old[index] === value) return;
    values[name] = old.map((v, i) => (i === index ? value : v));
    if (this.sent) {
      this.later = values;
      return;
    }
    this.send(values);
  }

  send(values) {
    if (JSON.stringify(values) === JSON.stringify(this.model.get("values") || {})) {
      delete this.el.dataset.busy;
      return;
    }
    this.sent += 1;
    this.started = performance.now();
    this.el.dataset.busy = "true";
    this.model.set("values", values);
    this.model.save_changes();
  }

  // The kernel handled an edit (a new recording, or a notice that fn failed): the edit that
  // waited goes now.
  answered() {
    const ours = this.sent > 0; // not an edit made from Python (explorer.set)
    this.sent = Math.max(0, this.sent - 1);
    // from the edit to the frame that shows it (the kernel's run, the messages, the redraw)
    const started = this.started;
    if (ours) requestAnimationFrame(() => {
      const took = Math.round(performance.now() - started);
      this.el.dataset.editMs = String(took);
      this.timing.textContent = `shown ${took} ms after the edit`;
    });
    const waiting = this.later;
    this.later = null;
    if (waiting) this.send(waiting);
    else delete this.el.dataset.busy;
  }
}
