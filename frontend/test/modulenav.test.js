// Stepping by module, as in a debugger: over, out, back.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ModuleNav } from "../src/modulenav.js";

// steps 1-2 in block.1, 3-4 in block.0 (inside the model), 5 at the top
const data = {
  steps: [{}, { node: "a" }, { node: "b" }, { node: "c" }, { node: "d" }, { node: "e" }],
  nav: { chains: { a: ["model", "block.1"], b: ["model", "block.1"], c: ["model", "block.0"], d: ["model", "block.0"], e: [] } },
};
const nav = new ModuleNav(data);

test("over goes past the module the active node runs in; out past the one around it", () => {
  assert.equal(nav.past(1, 0, 5), 3);
  assert.equal(nav.past(3, 0, 5), 5);
  assert.equal(nav.past(1, 1, 5), 5);
  assert.equal(nav.past(5, 0, 5), 5); // no module: one step, never past the last
  assert.equal(nav.past(-2, 0, 5), -1); // a forward frame: one step
});

test("back goes to where this module's run started, or the previous run's start", () => {
  assert.equal(nav.back(4, -3), 3);
  assert.equal(nav.back(3, -3), 1);
  assert.equal(nav.back(0, -3), -1);
  assert.equal(nav.back(-3, -3), -3);
});
