// The panel's source row reads data.sources: each line once, an index per step and frame.
import assert from "node:assert/strict";
import { test } from "node:test";
import { sourceOf } from "../src/source.js";

const a = { where: "m.py:3", line: 3 };
const b = { where: "cell [2] line 1", line: 1 };
const data = { sources: { lines: [a, b], steps: [null, 0, 0, null], forward: [1, 0] } };

test("a step's or a forward frame's line, or null", () => {
  assert.equal(sourceOf(data, 1, -2), a);
  assert.equal(sourceOf(data, 2, -2), a);
  assert.equal(sourceOf(data, 0, -2), null); // the seed
  assert.equal(sourceOf(data, 3, -2), null); // made by no op
  assert.equal(sourceOf(data, -2, -2), b); // the first forward frame
  assert.equal(sourceOf(data, -1, -2), a);
  assert.equal(sourceOf({}, 1, 0), null); // no watch(): no sources
});
