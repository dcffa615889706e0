// The stepper a notebook output carries for where its widget cannot run (an exported page, a
// notebook reopened without widget state): each fallback (.gv-static[data-gv-fallback], see
// gradviz/stepper/embed.py) mounts its data in place of its picture. The live widget, once it
// shows, hides its fallback and sends it "gv-retire": that stepper then goes.

import { element } from "./dom.js";
import { mount } from "./mount.js";
import { LocalModel, expandBorn, inflate } from "./standalone.js";

// Mount every fallback in `doc` not yet mounted nor hidden; `features` as mount takes them.
// No stepper takes the focus: a click or the pointer over it gives it the keys.
export async function mountFallbacks(doc = document, features = {}) {
  const models = [];
  for (const holder of doc.querySelectorAll(".gv-static[data-gv-fallback]")) {
    const script = holder.querySelector(":scope > script.gv-replay-data");
    if (!script || script.dataset.gvMounted || holder.style.display === "none") continue;
    script.dataset.gvMounted = "1";
    const text = script.dataset.encoding === "gzip+7bit" ? await inflate(script.textContent) : script.textContent;
    const model = new LocalModel(expandBorn(JSON.parse(text)));
    const host = element("div", "gv-host");
    script.after(host);
    const dispose = mount(host, model, features);
    const picture = holder.querySelector(":scope > .gv-picture");
    if (picture) picture.hidden = true;
    holder.addEventListener(
      "gv-retire",
      () => {
        dispose();
        host.remove();
      },
      { once: true },
    );
    models.push(model);
  }
  return models;
}
