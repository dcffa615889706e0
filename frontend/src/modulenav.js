// Stepping by module, as in a debugger (data.nav.chains: each node's modules, outermost
// first). Over: past the module the active node runs in; out: past its parent module; back:
// to the start of the previous module's run.
export class ModuleNav {
  constructor(data) {
    this.steps = data.steps || [];
    this.chains = (data.nav && data.nav.chains) || {};
  }

  chain(index) {
    const step = this.steps[index];
    return (step && step.node && this.chains[step.node]) || [];
  }

  // The first step after `index` outside the module `up` levels above the innermost.
  past(index, up, last) {
    if (index < 0) return index + 1;
    const chain = this.chain(index);
    const module = chain[chain.length - 1 - up];
    if (module === undefined) return Math.min(index + 1, last);
    let j = index + 1;
    while (j <= last && this.chain(j).includes(module)) j++;
    return Math.min(j, last);
  }

  back(index, start) {
    if (index <= 0) return Math.max(index - 1, start);
    const inner = (i) => this.chain(i)[this.chain(i).length - 1];
    let j = index;
    const here = inner(j);
    while (j > 1 && here !== undefined && inner(j - 1) === here) j--; // start of this run
    if (j === index) {
      j = Math.max(index - 1, 0); // already at a start: the previous run
      const prev = inner(j);
      while (j > 1 && prev !== undefined && inner(j - 1) === prev) j--;
    }
    return j;
  }
}
