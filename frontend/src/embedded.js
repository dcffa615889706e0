// The stepper a notebook output carries for where its widget cannot run (an exported page, a
// notebook reopened without widget state): each fallback (.gv-static[data-gv-fallback], see
// gradviz/stepper/embed.py) mounts its data in place of its picture. The live widget, once it
// shows, hides its fallback and sends it "gv-retire": that stepper then goes.

import { element } from "./dom.js";
import { mount } from "./mount.js";
import { LocalModel, expandBorn, inflate } from "./standalone.js";

// Mount every fallback in `doc` not yet mounted nor hidden, once its widget is known not to
// show (widgetFate); `features` as mount takes them. No stepper takes the focus: a click or
// the pointer over it gives it the keys.
export function mountFallbacks(doc = document, features = {}) {
  const mounted = [];
  for (const holder of doc.querySelectorAll(".gv-static[data-gv-fallback]")) {
    const script = holder.querySelector(":scope > script.gv-replay-data");
    if (!script || script.dataset.gvWaiting || script.dataset.gvMounted) continue;
    script.dataset.gvWaiting = "1";
    const mountUnlessLive = (live) => {
      if (live) holder.style.display = "none"; // the widget shows: its fallback, drawn again, steps aside
      return live || holder.style.display === "none" ? null : mountOne(holder, script, features);
    };
    mounted.push(widgetFate(holder).then(mountUnlessLive));
  }
  return Promise.all(mounted);
}

// JupyterLab draws the widget's output right after the fallback's, in a node of its own (no
// data-mime-type, unlike its other outputs): "Loading widget..." at first, then the live
// widget (a Lumino widget inside) or, for a notebook saved without widget state, its error
// (text only, class jupyter-widgets, as nbconvert's page marks the widget's place). Resolves
// true when the widget shows, false when it will not or where there is no such node.
export function widgetFate(holder) {
  const child = holder.closest(".jp-OutputArea-child");
  const next = child && child.nextElementSibling;
  const node = next && next.querySelector(":scope > .jp-OutputArea-output:not([data-mime-type])");
  if (!node) return Promise.resolve(false);
  const live = () => node.querySelector(":scope > .lm-Widget");
  const fate = () => (live() ? true : node.classList.contains("jupyter-widgets") ? false : null);
  if (fate() !== null) return Promise.resolve(fate());
  return new Promise((resolve) => {
    const watch = new MutationObserver(() => {
      if (fate() === null) return;
      watch.disconnect();
      resolve(fate());
    });
    watch.observe(node, { attributes: true, childList: true });
  });
}

async function mountOne(holder, script, features) {
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
  return model;
}
