// The key map: one table of keys, the same in the widget, on the page and in presentation mode.
import assert from "node:assert/strict";
import { test } from "node:test";
import { KEY_HELP, PRESENT_KEYS, STEP_KEYS, isMapped, presentAction, stepAction } from "../src/keys.js";

test("arrows, page keys, Space and Enter step; Home and End jump; o u b by module; c follows; p plays", () => {
  const keys = ["ArrowRight", "ArrowLeft", "PageDown", "PageUp", " ", "Enter", "Backspace", "Home", "End"];
  assert.deepEqual(
    keys.map((k) => stepAction(k, "DIV")),
    ["next", "prev", "next", "prev", "next", "next", "prev", "first", "last"],
  );
  assert.deepEqual(
    ["o", "u", "b", "c", "p", "?"].map((k) => stepAction(k, "DIV")),
    ["over", "out", "back", "follow", "play", "help"],
  );
  assert.equal(stepAction("x", "DIV"), null);
  assert.equal(stepAction("toString", "DIV"), null); // not a key of the table's prototype
});

test("keys typed into a field stay there; a checkbox still steps; Space and Enter on a button click it", () => {
  for (const tag of ["INPUT", "SELECT", "TEXTAREA"]) assert.equal(stepAction("ArrowRight", tag), null);
  assert.equal(stepAction("ArrowRight", "INPUT", true), "next");
  assert.equal(stepAction(" ", "INPUT", true), null); // Space ticks the checkbox
  assert.equal(stepAction(" ", "BUTTON"), null);
  assert.equal(stepAction("Enter", "BUTTON"), null);
  assert.equal(stepAction("ArrowRight", "BUTTON"), "next");
});

test("b is back in every mode: blanking is '.', only while presenting", () => {
  assert.equal(stepAction("b", "DIV"), "back");
  assert.equal(presentAction("b", true), null);
  assert.equal(presentAction("B", true), null);
  assert.equal(presentAction(".", true), "blank");
  assert.equal(presentAction(".", false), null);
  for (const key of Object.keys(PRESENT_KEYS)) assert.ok(!Object.hasOwn(STEP_KEYS, key), key); // one meaning
});

test("F presents and the text size changes in every mode; Escape acts only while presenting", () => {
  assert.equal(presentAction("f", false), "toggle");
  assert.equal(presentAction("F", true), "toggle");
  assert.deepEqual(
    ["+", "=", "-"].map((k) => presentAction(k, false)),
    ["bigger", "bigger", "smaller"],
  );
  assert.equal(presentAction("Escape", false), null);
  assert.equal(presentAction("Escape", true), "escape");
  assert.equal(presentAction("q", true), null);
});

test("the map's keys are the stepper's (not with Ctrl, Alt, Cmd, nor Shift+Enter, the notebook's)", () => {
  const key = (k, mods = {}) => ({ key: k, ctrlKey: false, metaKey: false, altKey: false, shiftKey: false, ...mods });
  for (const k of ["ArrowRight", " ", "b", ".", "?", "m", "h", "d", "s", "Escape"]) assert.ok(isMapped(key(k)), k);
  assert.ok(!isMapped(key("a")));
  assert.ok(!isMapped(key("ArrowRight", { ctrlKey: true })));
  assert.ok(!isMapped(key("s", { metaKey: true })));
  assert.ok(!isMapped(key("Enter", { shiftKey: true })));
});

test("the key table shown by ? names every key of the map", () => {
  const shown = new Set(KEY_HELP.flatMap(([keys]) => keys.split(" ")));
  const names = { " ": "Space", ArrowRight: "→", ArrowLeft: "←", ArrowUp: "↑", ArrowDown: "↓" };
  for (const key of [...Object.keys(STEP_KEYS), ...Object.keys(PRESENT_KEYS)]) {
    if (key === "F") continue; // f, either case
    assert.ok(shown.has(names[key] || key), key);
  }
});
