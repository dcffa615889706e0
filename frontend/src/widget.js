// The notebook widget's render, as anywidget calls it ({ model, el }): the stepper over the
// widget's synced traits.

import { mount } from "./mount.js";

// anywidget's render, with the `features` mount takes. Once the live stepper shows, the
// fallback published beside it for places where widgets do not run (an exported page: its
// picture and offline stepper, gradviz/stepper/embed.py) steps aside.
export function widgetRender(features) {
  return ({ model, el }) => {
    const fallback = String(model.get("fallback") || "");
    if (fallback) {
      for (const e of document.querySelectorAll(".gv-static[data-gv-fallback]")) {
        if (e.getAttribute("data-gv-fallback") !== fallback) continue;
        e.style.display = "none";
        e.dispatchEvent(new CustomEvent("gv-retire")); // its own stepper, if it mounted one, goes
      }
    }
    return mount(el, model, features);
  };
}
