// The step schedule: the class rules and ClassIndex, which restyles only what changes.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ClassIndex, boxClass, bornClass, classesAt, flowClass, lowerBound, nodeClass } from "../src/schedule.js";

test("a node is pending, active at the step it runs, then done; never run: notrun", () => {
  assert.deepEqual([1, 2, 3, 4].map((i) => nodeClass(3, i)), ["gv_pending", "gv_pending", "gv_active", "gv_done"]);
  assert.equal(nodeClass(null, 2), "gv_notrun");
  assert.equal(nodeClass(undefined, 2), "gv_notrun");
  assert.equal(nodeClass(3, -1), ""); // a forward frame: backward has not started
});

test("a collapsed module is active at its members' steps and partial between them", () => {
  const steps = [2, 4];
  assert.deepEqual([1, 2, 3, 4, 5].map((i) => boxClass(steps, i)), [
    "gv_pending",
    "gv_active",
    "gv_partial",
    "gv_active",
    "gv_done",
  ]);
  assert.equal(boxClass([], 3), "gv_notrun");
  assert.equal(boxClass(steps, -2), "");
});

test("an edge's gradient is hidden until it flows; an element is future until it is born", () => {
  assert.deepEqual([1, 2, 3].map((i) => flowClass(2, i)), ["gv_hidegrad", "gv_flowing", ""]);
  assert.deepEqual([-3, -2, -1].map((i) => bornClass(-2, i)), ["gv_future", "gv_born", ""]);
});

const schedule = {
  nodes: { g_a: 1, g_b: 2, g_c: null },
  boxes: { g_m: [1, 2] },
  edges: { g_e1: 1, g_e2: 2 },
  links: { g_l: 2 },
  born: { backward: { g_a: -2, g_b: -1, g_e1: -1 } },
  nonfinite: { g_b: 2 },
};

test("classesAt joins the backward class, the born class and the NaN mark", () => {
  assert.deepEqual(classesAt(schedule, -1), { g_b: "gv_born", g_e1: "gv_hidegrad gv_born", g_e2: "gv_hidegrad", g_l: "gv_hidegrad" });
  assert.deepEqual(classesAt(schedule, 2), {
    g_a: "gv_done",
    g_b: "gv_active gv_nonfinite",
    g_c: "gv_notrun",
    g_m: "gv_active",
    g_e2: "gv_flowing",
    g_l: "gv_flowing",
  });
  assert.deepEqual(classesAt(schedule, 2, "other").g_b, "gv_active gv_nonfinite"); // no born map there
});

test("ClassIndex gives classesAt's classes and lists every element that changes", () => {
  const index = new ClassIndex(schedule, schedule.born.backward);
  const steps = [-2, -1, 0, 1, 2, 3];
  const at = (i) => {
    const out = {};
    for (const id of index.info.keys()) if (index.classOf(id, i)) out[id] = index.classOf(id, i);
    return out;
  };
  for (const a of steps) {
    assert.deepEqual(at(a), classesAt(schedule, a), `step ${a}`);
    for (const b of steps) {
      const changed = index.changed(a, b);
      for (const id of index.info.keys()) {
        if (index.classOf(id, a) !== index.classOf(id, b)) {
          assert.ok(changed === null || changed.has(id), `${id} changes from ${a} to ${b}`);
        }
      }
    }
  }
  assert.equal(index.changed(-1, 0), null); // into the backward pass: everything
  assert.deepEqual([...index.changed(1, 1)].sort(), ["g_a", "g_e1", "g_m"]);
});

test("lowerBound finds the first index not below the value", () => {
  assert.equal(lowerBound([1, 2, 2, 5], 2), 1);
  assert.equal(lowerBound([1, 2, 2, 5], 3), 3);
  assert.equal(lowerBound([1, 2], 9), 2);
  assert.equal(lowerBound([], 0), 0);
});
