// Run to: the page's breakpoints stop where gradviz.analysis.breakpoints says.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Breakpoints } from "../src/breakpoints.js";
import { RUN_KEYS, isMapped, runAction } from "../src/keys.js";

// steps 1..5: 2 sends a NaN; norms [min, max]; modules: 0 the model, 1 "enc", 2 "enc.0"
const data = {
  count: 6,
  steps: [{ type: "seed" }, { type: "SumBackward0" }, { type: "LogBackward0" }, { type: "MulBackward0" }, { type: "MulBackward0" }, { type: "AccumulateGrad" }],
  breakpoints: {
    norms: [[1, 1], [1, 1], [0.5, "Infinity"], [1e-7, 2], [null, null], [3, 3]],
    nonfinite_steps: [2],
    norm_above: { threshold: 1000, step: 2 },
    norm_below: { threshold: 1e-6, step: 3 },
    scopes: [["", null], ["enc", 0], ["enc.0", 1]],
    step_scopes: [null, 0, 2, 1, 2, null],
  },
};
const bp = new Breakpoints(data);

test("next NaN / Inf, and nothing after the last", () => {
  assert.equal(bp.next(0, "nonfinite"), 2);
  assert.equal(bp.next(2, "nonfinite"), null);
  assert.equal(bp.next(-3, "nonfinite"), 2); // from a forward frame
});

test("norms: strictly above / below; an Inf norm is above every threshold; no norm is neither", () => {
  assert.equal(bp.next(0, "above", 1000), 2);
  assert.equal(bp.next(2, "above", 2), 5);
  assert.equal(bp.next(0, "above", 3), 2);
  assert.equal(bp.next(2, "above", 3), null); // 3 is not above 3
  assert.equal(bp.next(0, "below", 1e-6), 3);
  assert.equal(bp.next(3, "below", 1), null); // step 4 has no norm
});

test("a module matches its submodules' steps; types match exactly", () => {
  assert.deepEqual(bp.modulePaths(), ["enc", "enc.0"]);
  assert.equal(bp.next(0, "module", "enc"), 2);
  assert.equal(bp.next(2, "module", "enc"), 3);
  assert.equal(bp.next(2, "module", "enc.0"), 4);
  assert.equal(bp.moduleOf(3), "enc");
  assert.equal(bp.moduleOf(1), null); // the model's own call has no path
  assert.deepEqual(bp.types(), ["AccumulateGrad", "LogBackward0", "MulBackward0", "SumBackward0"]);
  assert.equal(bp.next(3, "type", "MulBackward0"), 4);
  assert.equal(bp.next(4, "type", "MulBackward0"), null);
});

test("each breakpoint has a key of the map", () => {
  assert.deepEqual(Object.values(RUN_KEYS).sort(), ["above", "below", "module", "nonfinite", "type"]);
  const key = (k) => ({ key: k, ctrlKey: false, metaKey: false, altKey: false, shiftKey: k === ">" || k === "<" });
  for (const k of Object.keys(RUN_KEYS)) assert.ok(isMapped(key(k)), k);
  assert.equal(runAction("n"), "nonfinite");
  assert.equal(runAction("toString"), null);
});
