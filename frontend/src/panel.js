// The side panel: what the step shown did (a backward step) or made (a forward frame).

import { element } from "./dom.js";
import { sourceRow } from "./source.js";

// A backward step's panel: its node, module, op, gradients received and sent, the narration,
// and what a user's hook changed.
export function fillPanel(panel, step, index, source = null) {
  const parts = [];
  const head = element("div", "gv-panel-head");
  head.append(element("span", "gv-panel-index", index === 0 ? "seed" : `step ${index}`));
  head.append(element("span", "gv-panel-type", step.type || ""));
  parts.push(head);
  if (step.module) parts.push(row("module", String(step.module)));
  if (step.forward) parts.push(row("forward op", String(step.forward)));
  else if (step.op && index > 0) parts.push(row("op", String(step.op)));
  if (source) parts.push(sourceRow(source)); // the line that made the node
  if (step.received && step.received.length) parts.push(list("received", step.received.map(String)));
  if (step.sent && step.sent.length) {
    parts.push(list("sent", step.sent.map((s) => `${s.slot} → ${s.to}: ${s.value}`)));
  }
  parts.push(element("p", "gv-narration", step.narration || ""));
  // a user's hook changed a gradient here: say so, with the value before and after
  const hooks = step.hooks || [];
  for (const change of hooks) parts.push(element("p", "gv-warning", String(change)));
  if (step.flow_ok === false && !hooks.length) {
    parts.push(element("p", "gv-warning", "flow check failed"));
  }
  if (step.checked === false) {
    // explain.py falls back to a plain sentence when a formula disagrees; unchecked means
    // the saved tensors it needs were already freed, so the numbers could not be verified.
    parts.push(element("p", "gv-note", "formula not checked: its saved tensors were freed " +
      "(record with retain_graph=True to check it against the recorded numbers)"));
  }
  panel.replaceChildren(...parts);
}

// A forward frame: which op ran, at which line, what it made and what autograd recorded.
export function fillForward(panel, op, source = null) {
  const parts = [];
  const head = element("div", "gv-panel-head");
  head.append(element("span", "gv-panel-index", `forward ${op.index || ""}`));
  head.append(element("span", "gv-panel-type", op.recorded || op.type || ""));
  parts.push(head);
  if (op.code) parts.push(row("code", String(op.code)));
  if (source) parts.push(sourceRow(source, false)); // the line, with its link
  else if (op.line) parts.push(row("line", String(op.line)));
  if (op.outputs && op.outputs.length) parts.push(list("made", op.outputs.map(String)));
  parts.push(element("p", "gv-narration", op.narration || ""));
  panel.replaceChildren(...parts);
}

function row(key, value) {
  const r = element("div", "gv-row");
  r.append(element("span", "gv-key", key), element("span", "gv-value", value));
  return r;
}

function list(key, items) {
  const box = element("div", "gv-row");
  box.append(element("span", "gv-key", key));
  const ul = element("ul", "gv-list");
  for (const item of items) ul.append(element("li", "", item));
  box.append(ul);
  return box;
}
