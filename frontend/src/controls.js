// The stepper's controls: the stepping toolbar and the tools (view, search, zoom, download).
// `act` holds the stepper's actions by name; the controls call them and hold no state.

import { button, element } from "./dom.js";
import { Search } from "./search.js";

const SPEEDS = [0.5, 1, 2, 4];

// First, Prev, Play, Next, Last, the module steps (with module data), speed, slider, counter.
export function stepControls(data, start, last, act) {
  const bar = element("div", "gv-toolbar");
  const first = button("« First", "First step (Home)", () => act.first());
  const prev = button("‹ Prev", "Previous step (←)", () => act.prev());
  const play = button("▶ Play", "Play / pause (p)", () => act.play());
  play.classList.add("gv-play");
  const next = button("Next ›", "Next step (→, Space)", () => act.next());
  const end = button("Last »", "Last step (End)", () => act.last());
  first.classList.add("gv-first");
  prev.classList.add("gv-prev");
  next.classList.add("gv-next");
  end.classList.add("gv-last");
  const speed = element("select", "gv-speed");
  speed.title = "Play speed";
  for (const s of SPEEDS) {
    const o = element("option", "", `${s}×`);
    o.value = String(s);
    o.selected = s === 1;
    speed.append(o);
  }
  const slider = element("input", "gv-slider");
  slider.type = "range";
  slider.min = String(start);
  slider.max = String(last);
  slider.step = "1";
  slider.title = "Step";
  slider.addEventListener("input", () => act.go(Number(slider.value)));
  const counter = element("span", "gv-counter");
  counter.setAttribute("aria-live", "polite");
  // stepping by module (when the recording has module data), as in a debugger
  const over = button("Over ⤼", "Step over: past the module the active node runs in (o)", () => act.over());
  const out = button("Out ⤴", "Step out: past the module around it (u)", () => act.out());
  const back = button("⤺ Back", "Back to where the previous module started (b)", () => act.back());
  over.classList.add("gv-over");
  out.classList.add("gv-out");
  back.classList.add("gv-back");
  bar.append(first, prev, play, next, end);
  if (data.nav) bar.append(back, over, out);
  bar.append(speed, slider, counter);
  return { bar, first, prev, play, next, end, speed, slider, counter };
}

// The view and its depth, search, gradient labels, zoom, Follow and Download.
export function viewTools(data, viewNames, collapsedViews, act) {
  const tools = element("div", "gv-toolbar gv-tools");
  const viewSelect = element("select", "gv-view");
  viewSelect.title = "View";
  for (const name of viewNames) {
    if (collapsedViews.includes(name) && name !== collapsedViews[0]) continue;
    const choice = collapsedViews.includes(name) ? "collapsed" : name;
    const o = element("option", "", choice);
    o.value = choice;
    viewSelect.append(o);
  }
  viewSelect.addEventListener("change", () => {
    act.chooseView(viewSelect.value);
  });
  // the depth of the collapsed view: modules deeper than it are one box each
  const depthBox = element("label", "gv-depthbox", "collapse modules at depth ");
  const depthSelect = element("select", "gv-depth");
  depthSelect.title = "Draw each module at this depth (0: the model) as one box; click a box to expand it";
  for (const name of collapsedViews) {
    const o = element("option", "", name.slice("collapsed-".length));
    o.value = name;
    depthSelect.append(o);
  }
  depthSelect.addEventListener("change", () => act.setView(depthSelect.value));
  depthBox.append(depthSelect);
  depthBox.hidden = true;
  const labelsBox = element("label", "gv-labels");
  const labels = element("input");
  labels.type = "checkbox";
  labels.checked = true;
  labels.addEventListener("change", () => act.labels(labels.checked));
  labelsBox.append(labels, document.createTextNode(" gradient labels"));
  const zoomIn = button("+", "Zoom in (or Ctrl + wheel)", () => act.zoom(1 / 1.25));
  const zoomOut = button("−", "Zoom out", () => act.zoom(1.25));
  const fit = button("Fit", "Fit the graph to the view", () => act.fit());
  fit.classList.add("gv-fit");
  const followButton = button("Follow", "The view follows the active node (c); moving the view by hand pauses it", () => act.follow());
  followButton.classList.add("gv-follow");
  const search = new Search(data.search, (matches, at) => act.found(matches, at));
  const download = button("Download SVG", "Download this step as SVG", () => act.download());
  download.classList.add("gv-download");
  tools.append(viewSelect);
  if (collapsedViews.length) tools.append(depthBox);
  tools.append(search.el, labelsBox, zoomOut, zoomIn, fit, followButton, download);
  return { tools, viewSelect, depthBox, depthSelect, labels, followButton, search };
}
