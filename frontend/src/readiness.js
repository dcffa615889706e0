// Readiness and the tests' API: data-ready="1" once the first frame with the graph has been
// painted; root.gvState() tells the step, the view, which elements are in the DOM and every
// element's replay classes (big graphs keep elements far from the camera out of the DOM, so
// the DOM alone cannot say).
export function exposeState(root, getView, current) {
  requestAnimationFrame(() =>
    setTimeout(() => {
      root.dataset.ready = "1";
      if (performance.mark) performance.mark("gv-ready");
    }, 0),
  );
  root.gvState = () => {
    const view = getView();
    const classes = {};
    if (view) for (const [id, cls] of view.current) if (cls) classes[id] = cls;
    return {
      step: current(),
      view: view ? view.name : null,
      elements: view ? view.byId.size : 0,
      attached: view && view.virtual ? view.virtual.attached : null,
      parsed: view && view.lazy ? view.lazy.parsed() : null, // of its nodes and edges
      classes,
    };
  };
}
