// The explanations: memory, gradient health, the diff of two runs and the optimizer step,
// each where the data has it. The offline page ships them only then, the notebook widget
// always. To add one: a class with update(view, index, panelRows) and key(event) in a module
// of its own, made here when its data key is present (and that key added to EXPLAINED in
// gradviz/stepper/page.py, so the page ships this code with it).

import { DiffOverlay } from "./diff.js";
import { HealthOverlay } from "./health.js";
import { MemoryOverlay } from "./memory.js";
import { OptimizerPanel } from "./optimizer.js";

// mount's overlay: the parts this stepper's data has, or null.
export function explain(ctx) {
  const parts = [];
  if (ctx.data.diff) parts.push(new DiffOverlay(ctx));
  if (ctx.data.memory) parts.push(new MemoryOverlay(ctx));
  if (ctx.data.health) parts.push(new HealthOverlay(ctx));
  if (ctx.data.optimizer) parts.push(new OptimizerPanel(ctx));
  return parts.length ? parts : null;
}
