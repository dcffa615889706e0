// The step schedule: which replay classes each element of a view has at a step.
//
// Steps: 0 is the seed, 1..N the backward steps. A recording made under gradviz.watch() also
// has forward frames -F..-1 before the seed (data.first = -F), one per forward op: elements
// appear (schedule.born[view]: the step an element is made at) as the code builds the graph.
// gradviz.replay.classes_at is the Python reference of these rules (tests/test_frontend_schedule.py
// compares them at every step of every view).

export const REPLAY_CLASSES = [
  "gv_done",
  "gv_active",
  "gv_pending",
  "gv_notrun",
  "gv_hidegrad",
  "gv_flowing",
  "gv_future",
  "gv_born",
  "gv_partial",
  "gv_nonfinite",
];

// The class of a backward node that ran at step `ran` (null: it did not run).
export function nodeClass(ran, index) {
  if (index < 0) return ""; // a forward frame: backward has not started
  if (ran === null || ran === undefined) return "gv_notrun";
  if (ran < index) return "gv_done";
  return ran === index ? "gv_active" : "gv_pending";
}

// A collapsed module from its members' (sorted) steps, as gradviz.replay.box_class.
export function boxClass(steps, index) {
  if (index < 0) return "";
  if (!steps.length) return "gv_notrun";
  if (index < steps[0]) return "gv_pending";
  if (index > steps[steps.length - 1]) return "gv_done";
  return steps.includes(index) ? "gv_active" : "gv_partial";
}

export function flowClass(at, index) {
  if (at > index) return "gv_hidegrad";
  return at === index ? "gv_flowing" : "";
}

export function bornClass(at, index) {
  if (index < at) return "gv_future";
  return at === index ? "gv_born" : "";
}

// Every scheduled element's classes at `index` in `view`, "" where it has none; several
// classes are joined by a space, the backward one first (as gradviz.replay.classes_at).
function elementClasses(schedule, index, view) {
  const out = new Map();
  for (const [id, ran] of Object.entries(schedule.nodes)) out.set(id, nodeClass(ran, index));
  for (const [id, steps] of Object.entries(schedule.boxes || {})) out.set(id, boxClass(steps, index));
  for (const group of ["edges", "links"]) {
    for (const [id, at] of Object.entries(schedule[group])) out.set(id, flowClass(at, index));
  }
  const born = (schedule.born && schedule.born[view]) || {};
  for (const [id, at] of Object.entries(born)) {
    const had = out.get(id) || "";
    const extra = bornClass(at, index);
    out.set(id, had && extra ? `${had} ${extra}` : had || extra);
  }
  // where NaN or Inf first appeared, marked from that step on (schedule.nonfinite)
  for (const [id, at] of Object.entries(schedule.nonfinite || {})) {
    const had = out.get(id) || "";
    if (index >= at) out.set(id, had ? `${had} gv_nonfinite` : "gv_nonfinite");
  }
  return out;
}

export function classesAt(schedule, index, view = "backward") {
  const out = {};
  for (const [id, cls] of elementClasses(schedule, index, view)) if (cls) out[id] = cls;
  return out;
}

// Which elements of one view change between two steps: every scheduled time sorted, so a
// step from a to b restyles only the elements with a time in [a, b] (and the module boxes).
// Crossing into the backward pass (step -1 to 0) restyles everything: nodes get classes.
export class ClassIndex {
  constructor(schedule, born) {
    this.info = new Map();
    const times = [];
    const entry = (id) => {
      let e = this.info.get(id);
      if (!e) this.info.set(id, (e = {}));
      return e;
    };
    const timed = (id, at) => {
      if (at !== null && at !== undefined) times.push([at, id]);
    };
    for (const [id, ran] of Object.entries(schedule.nodes)) {
      entry(id).ran = ran === undefined ? null : ran;
      timed(id, ran);
    }
    this.boxes = Object.keys(schedule.boxes || {});
    for (const id of this.boxes) entry(id).steps = schedule.boxes[id];
    for (const group of ["edges", "links"]) {
      for (const [id, at] of Object.entries(schedule[group])) {
        entry(id).at = at;
        timed(id, at);
      }
    }
    for (const [id, at] of Object.entries(born || {})) {
      entry(id).born = at;
      timed(id, at);
    }
    for (const [id, at] of Object.entries(schedule.nonfinite || {})) {
      entry(id).nf = at;
      timed(id, at);
    }
    times.sort((a, b) => a[0] - b[0]);
    this.times = times.map((t) => t[0]);
    this.ids = times.map((t) => t[1]);
  }

  classOf(id, index) {
    const e = this.info.get(id);
    if (!e) return "";
    let cls = "";
    if (e.ran !== undefined) cls = nodeClass(e.ran, index);
    if (e.steps) cls = boxClass(e.steps, index);
    if (e.at !== undefined) cls = flowClass(e.at, index);
    if (e.born !== undefined) {
      const extra = bornClass(e.born, index);
      cls = cls && extra ? `${cls} ${extra}` : cls || extra;
    }
    if (e.nf !== undefined && index >= e.nf) cls = cls ? `${cls} gv_nonfinite` : "gv_nonfinite";
    return cls;
  }

  // The ids whose class may differ between steps `a` and `b`; null: all of them.
  changed(a, b) {
    const lo = Math.min(a, b);
    const hi = Math.max(a, b);
    if (lo < 0 && hi >= 0) return null;
    const out = new Set(this.boxes);
    let i = lowerBound(this.times, lo);
    while (i < this.times.length && this.times[i] <= hi) out.add(this.ids[i++]);
    return out;
  }
}

export function lowerBound(sorted, value) {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
