// Breakpoints in the backward pass, as a debugger's "run to": the next step with a NaN or Inf
// gradient, with a gradient norm above or below a threshold, in a module, or of a node type.
// The search reads data.breakpoints (gradviz.analysis.breakpoints.breakpoint_data), whose
// norms are the ones rec.find() compares, so the page stops where rec.find(start=s + 1)[0]
// does. Pure functions of the data: tested under Node.

// A norm from the page's JSON: a number, "Infinity", or null (no gradient with a norm).
function normOf(value) {
  return value === null || value === undefined ? null : Number(value);
}

export class Breakpoints {
  constructor(data) {
    const bp = data.breakpoints || {};
    this.available = Boolean(data.breakpoints);
    this.steps = data.steps || [];
    this.last = (Number(data.count) || this.steps.length) - 1;
    this.norms = bp.norms || [];
    this.bad = new Set(bp.nonfinite_steps || []);
    this.scopes = bp.scopes || []; // [path, parent] per module call
    this.stepScopes = bp.step_scopes || []; // the innermost call per step, or null
    this.above = (bp.norm_above && bp.norm_above.threshold) ?? 1e3;
    this.below = (bp.norm_below && bp.norm_below.threshold) ?? 1e-6;
  }

  // The module paths (outermost first, as first met) a step can run in; the model's own
  // call (path "") is every step's, so it is left out, as rec.find(module="") is refused.
  modulePaths() {
    const paths = [];
    for (const [path] of this.scopes) if (path && !paths.includes(path)) paths.push(path);
    return paths;
  }

  // The node types of the backward steps, sorted.
  types() {
    const types = new Set();
    for (let i = 1; i <= this.last; i++) if (this.steps[i] && this.steps[i].type) types.add(this.steps[i].type);
    return [...types].sort();
  }

  // The module paths of the calls around step `index`'s node, innermost first.
  chain(index) {
    const paths = [];
    let scope = this.stepScopes[index];
    while (scope !== null && scope !== undefined && this.scopes[scope]) {
      paths.push(this.scopes[scope][0]);
      scope = this.scopes[scope][1];
    }
    return paths;
  }

  // The innermost named module of step `index`, or null.
  moduleOf(index) {
    return this.chain(index).find((path) => path) || null;
  }

  // Whether step `index` (1..N) meets the condition `kind` with `arg` (a threshold, a path
  // or a type), as gradviz.analysis.breakpoints does.
  matches(index, kind, arg) {
    const [low, high] = (this.norms[index] || [null, null]).map(normOf);
    switch (kind) {
      case "nonfinite":
        return this.bad.has(index);
      case "above":
        return high !== null && high > arg;
      case "below":
        return low !== null && low < arg;
      case "module":
        return this.chain(index).includes(arg);
      case "type":
        return Boolean(this.steps[index]) && this.steps[index].type === arg;
      default:
        return false;
    }
  }

  // The first step after `from` (a forward frame: from the first backward step) that
  // matches, or null.
  next(from, kind, arg) {
    for (let i = Math.max(from + 1, 1); i <= this.last; i++) if (this.matches(i, kind, arg)) return i;
    return null;
  }
}
