// Which element of a view stands for a node.

// The node's own element in `view`, else the collapsed module box that holds it (its
// innermost module drawn as one box), else null.
export function drawnElement(view, data, prefix, node) {
  const direct = view.byId.get(`${prefix}_${node}`);
  if (direct) return direct;
  // A node folded into a repeated block's box (fold=True) is drawn as that box.
  const fold = data.folded && view.byId.get(`${prefix}_${data.folded[node]}`);
  if (fold) return fold;
  const chain = (data.nav && data.nav.chains[node]) || [];
  for (let i = chain.length - 1; i >= 0; i--) {
    const box = view.byId.get(`${prefix}_bm${chain[i]}`);
    if (box) return box;
  }
  return null;
}
