// The key maps: what each key does while stepping and while presenting.
import assert from "node:assert/strict";
import { test } from "node:test";
import { PRESENT_MOVES, STEP_KEYS, presentAction, stepAction } from "../src/keys.js";

test("arrows and page keys step, Home and End jump, o u b step by module, c follows, space plays", () => {
  const keys = ["ArrowRight", "ArrowLeft", "PageDown", "PageUp", "Home", "End", "o", "u", "b", "c", " "];
  assert.deepEqual(
    keys.map((k) => stepAction(k, "DIV")),
    ["next", "prev", "next", "prev", "first", "last", "over", "out", "back", "follow", "play"],
  );
  assert.equal(stepAction("x", "DIV"), null);
  assert.equal(stepAction("toString", "DIV"), null); // not a key of the table's prototype
});

test("keys typed into a field stay there; a checkbox still steps; space on a button clicks it", () => {
  for (const tag of ["INPUT", "SELECT", "TEXTAREA"]) assert.equal(stepAction("ArrowRight", tag), null);
  assert.equal(stepAction("ArrowRight", "INPUT", true), "next");
  assert.equal(stepAction(" ", "BUTTON"), null);
  assert.equal(stepAction("ArrowRight", "BUTTON"), "next");
});

test("every stepping action names one of the stepper's actions", () => {
  const actions = new Set(["next", "prev", "first", "last", "over", "out", "back", "follow", "play"]);
  for (const action of Object.values(STEP_KEYS)) assert.ok(actions.has(action), action);
});

test("F presents in every mode; the other presentation keys act only while presenting", () => {
  assert.equal(presentAction("f", false), "toggle");
  assert.equal(presentAction("F", true), "toggle");
  assert.equal(presentAction("b", false), null);
  assert.equal(presentAction("Escape", false), null);
  assert.deepEqual(
    ["+", "=", "-", "b", "B", ".", "Escape"].map((k) => presentAction(k, true)),
    ["bigger", "bigger", "smaller", "blank", "blank", "blank", "escape"],
  );
});

test("a clicker steps while presenting: PageDown, Space and Enter on, PageUp and Backspace back", () => {
  assert.deepEqual(
    ["PageDown", " ", "Enter", "PageUp", "Backspace", "Home", "End"].map((k) => presentAction(k, true)),
    ["next", "next", "next", "prev", "prev", "first", "last"],
  );
  for (const move of Object.values(PRESENT_MOVES)) assert.ok(["next", "prev", "first", "last"].includes(move));
  assert.equal(presentAction("q", true), null);
});
