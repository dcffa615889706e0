// The notebook film strip's ES module, as anywidget loads it: `export default { render }`.
// A kept step's replay is embedded: its whole offline page, shown in a frame below the strip.
import { mountFilmstrip } from "../src/filmstrip.js";

function render({ model, el }) {
  const root = document.createElement("div");
  el.appendChild(root);
  let frame = null;
  function openReplay(step) {
    const page = (model.get("replays") || {})[String(step)];
    if (!page) return;
    if (!frame) {
      frame = document.createElement("iframe");
      frame.className = "gv-replay-frame";
      frame.title = "replay";
      root.appendChild(frame);
    }
    frame.dataset.step = String(step);
    frame.srcdoc = page;
    model.set("opened", step);
    model.save_changes();
  }
  const onStep = (step) => {
    if (model.get("step") === step) return;
    model.set("step", step);
    model.save_changes();
  };
  const strip = mountFilmstrip(root, model.get("data"), { openReplay, onStep });
  const follow = () => {
    const at = model.get("data").steps.indexOf(model.get("step"));
    if (at >= 0 && String(at) !== root.dataset.index) strip.choose(at);
  };
  model.on("change:step", follow);
  follow();
  return () => model.off("change:step", follow);
}

export default { render };
