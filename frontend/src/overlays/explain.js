// The explanations: memory, gradient health, the diff of two runs and the optimizer step,
// each where the data has it. The offline page ships them only then, the notebook widget
// always. An overlay is registered in one place, gradviz/replay/overlays.py's OVERLAYS, by
// the key of its data; its module here is overlays/<key>.js, whose default export is a class
// with update(view, index, panelRows) and key(event), made when the data has that key. The
// build (frontend/build.mjs) writes the "gradviz:overlays" module from that registry.

import OVERLAYS from "gradviz:overlays";

// mount's overlay: the parts this stepper's data has, or null.
export function explain(ctx) {
  const parts = OVERLAYS.filter(([key]) => ctx.data[key]).map(([, Overlay]) => new Overlay(ctx));
  return parts.length ? parts : null;
}
