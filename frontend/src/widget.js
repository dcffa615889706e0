// The notebook widget's render, as anywidget calls it ({ model, el }): the stepper over the
// widget's synced traits.

import { mount } from "./mount.js";

// anywidget's render, with the `features` mount takes. Once the live stepper shows, the
// fallback published beside it for places where widgets do not run (an exported page: its
// picture and offline stepper, gradviz/stepper/embed.py) steps aside. `features.leaves`
// (leaves.js): an explorer's model (gradviz.explore) gets its leaves panel above the stepper,
// and each new recording (change:revision) mounts the stepper again in place, at the model's
// step.
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
    const leaves = model.get("leaves");
    if (!features.leaves || !Array.isArray(leaves)) return mount(el, model, features);
    const panel = new features.leaves(model);
    const host = document.createElement("div");
    el.append(panel.el, host);
    let unmount = mount(host, model, features);
    // the same layout (no notice): the camera stays where the person had put it
    const again = () => {
      const stepper = host.querySelector(".gv-stepper");
      const box = stepper && stepper.dataset.follow === "off" ? cameraBox(stepper) : null;
      unmount();
      const kept = box && !model.get("notice") ? { ...features, camera: box } : features;
      unmount = mount(host, model, kept);
    };
    model.on("change:revision", again);
    return () => {
      model.off("change:revision", again);
      unmount();
      panel.close();
      host.remove();
    };
  };
}

// The box a stepper's camera shows (its data-camera, in SVG units), or null.
function cameraBox(stepper) {
  const [x, y, w, h] = String(stepper.dataset.camera || "").split(" ").map(Number);
  return [x, y, w, h].every(Number.isFinite) && w > 0 && h > 0 ? { x, y, w, h } : null;
}
