// The leaves panel's texts: numbers, element names, the finite-difference line, slider range.
import assert from "node:assert/strict";
import { test } from "node:test";
import { checkText, elementName, shown, sliderRange } from "../src/leaves.js";

test("numbers show six significant digits and None for no gradient", () => {
  assert.equal(shown(36), "36");
  assert.equal(shown(0.30000001192092896), "0.3");
  assert.equal(shown(null), "None");
  assert.equal(shown(Number.NaN), "NaN");
});

test("an element is named by its index in the leaf's shape", () => {
  assert.equal(elementName("a", [], 0), "a");
  assert.equal(elementName("w", [2, 3], 4), "w[1, 1]");
  assert.equal(elementName("v", [3], 2), "v[2]");
});

test("the check shows the estimate, its step and dtype, and the gap", () => {
  const text = checkText(36, { value: 35.9999999997, h: 4e-6, dtype: "float64" }, true);
  assert.match(text, /finite difference 36 \(central, h = 4\.0e-6, float64\); \|Δ\| = 3\.0e-10: agrees/);
  assert.match(checkText(3, { value: 4, h: 2e-6, dtype: "float64" }, false), /DISAGREES/);
  assert.equal(checkText(1, null, null), "");
});

test("a slider spans twice the value's size each way", () => {
  assert.deepEqual(sliderRange(0.5), { min: -1.5, max: 2.5, step: 0.02 });
  assert.deepEqual(sliderRange(-10), { min: -30, max: 10, step: 0.2 });
});
