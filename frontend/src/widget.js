// The notebook widget's render, as anywidget calls it ({ model, el }): the stepper over the
// widget's synced traits.

import { mount } from "./mount.js";

// anywidget's render, with the `features` mount takes. Once the live stepper shows, the
// static picture published beside it for places where widgets do not run (an exported page)
// steps aside.
export function widgetRender(features) {
  return ({ model, el }) => {
    const fallback = String(model.get("fallback") || "");
    if (fallback) {
      for (const e of document.querySelectorAll(".gv-static[data-gv-fallback]")) {
        if (e.getAttribute("data-gv-fallback") === fallback) e.style.display = "none";
      }
    }
    return mount(el, model, features);
  };
}
