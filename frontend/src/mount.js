// The stepper: mount(el, model) builds one stepper over a model with anywidget's surface
// (get, set, save_changes, on, off, send): the notebook widget's, or the standalone page's
// LocalModel. It steps by toggling classes (View), moves the camera, fills the panel, and
// wires the controls, keys and pointer; each of those lives in its own module.
//
// Module views (data.modules, under gradviz.watch(model)): "modules" draws one cluster per
// module; "collapsed-D" draws every module deeper than D as one box (schedule.boxes: the steps
// at which a node inside it runs). Clicking a box expands it: the stepper switches to the
// next depth's layout (or "modules"), where that module is a cluster, at the same step, and
// zooms to it; the depth control goes back.
// Views not shipped yet (the notebook lays them out when first chosen) are asked for with
// model.send({type: "view", name}); the page ships every view it offers.

import { drawnElement } from "./active.js";
import { Camera, MIN_TEXT_PX, NODE_FONT, presentTextPx, zoomed } from "./camera.js";
import { Presenter, Quiz, stageHeight } from "./classroom.js";
import { stepControls, viewTools } from "./controls.js";
import { element, followTheme } from "./dom.js";
import { downloadSvg, stepSvgText } from "./download.js";
import { drawnRegion } from "./geometry.js";
import { GradFields } from "./gradfields.js";
import { KeyHelp } from "./keyhelp.js";
import { routeKeys, stepAction } from "./keys.js";
import { Minimap } from "./minimap.js";
import { ModuleNav } from "./modulenav.js";
import { fillForward, fillPanel } from "./panel.js";
import { onPointer } from "./pointer.js";
import { Player } from "./play.js";
import { exposeState } from "./readiness.js";
import { RunTo } from "./runto.js";
import { sourceOf } from "./source.js";
import { Highlight } from "./search.js";
import { View } from "./view.js";

const STEP_MS = 1000; // a step's time when playing at 1x
const SCOPE = "#GVROOT"; // the stylesheet's placeholder for this stepper's selector
let mounted = 0;

// Mount a stepper into `el`; returns a function that unmounts it. `features`: what this
// build ships beyond the core: `split` (lazy/lazysvg.js: big views parsed lazily) and
// `overlays`, functions make(ctx) that return parts with update(view, index, panelRows) and
// key(event), or null where the data has none (overlays/explain.js); `camera`, a box
// {x, y, w, h} the camera opens on, not following (a stepper mounted again on the same
// layout keeps where the person had zoomed and panned).
export function mount(el, model, features = {}) {
  const split = features.split || null;
  const overlays = features.overlays || [];
  const svgText = (name) => (model.get("svgs") || {})[name];
  const data = model.get("data");
  const css = model.get("css");
  const schedule = data.schedule;
  const last = data.count - 1;
  const forward = data.forward || []; // the forward frames' panels (under watch())
  const modules = data.modules || null; // module views: collapsed depths and what boxes open
  const collapsedViews = modules ? modules.collapsed : [];
  let lastCollapsed = modules ? modules.default : null;
  const start = Number(data.first) || 0; // -F, or 0 (the seed) without forward frames
  const prefix = data.prefix || "";
  const viewNames = data.views || Object.keys(model.get("svgs") || {});
  const nav = new ModuleNav(data);
  // unique even if the module is loaded twice on one page (the scoped stylesheet uses it)
  const id = `gvs${++mounted}-${Math.random().toString(36).slice(2, 8)}`;
  const cleanups = [];

  const root = element("div", "gv-stepper");
  root.dataset.gvMount = id;
  root.tabIndex = 0;
  const style = document.createElement("style");
  style.textContent = String(css.scoped || "").split(SCOPE).join(`.gv-stepper[data-gv-mount="${id}"]`);
  root.append(style);

  const act = {
    go: (index) => go(index),
    first: () => go(start),
    prev: () => go(current() - 1),
    next: () => go(current() + 1),
    last: () => go(last),
    play: () => toggle(),
    help: () => keyHelp.toggle(),
    over: () => go(nav.past(current(), 0, last)),
    out: () => go(nav.past(current(), 1, last)),
    back: () => go(nav.back(current(), start)),
    follow: () => setFollow(!camera.following),
    chooseView: (choice) => setView(choice === "collapsed" ? lastCollapsed : choice),
    setView: (name) => setView(name),
    labels: (on) => root.classList.toggle("gv-nolabels", !on),
    zoom: (factor) => zoom(factor, undefined, undefined, true),
    fit: () => resetZoom(),
    found: (matches, at) => found(matches, at),
    download: () => download(),
  };
  const { bar, first, prev, play, next, end, speed, slider, counter } = stepControls(data, start, last, act);
  const runTo = new RunTo(data, { current: () => current(), go: (index) => go(index) });
  bar.append(runTo.el);
  const { tools, viewSelect, depthBox, depthSelect, labels, followButton, search } = viewTools(
    data,
    viewNames,
    collapsedViews,
    act,
  );

  // -- graph and panel --
  const main = element("div", "gv-main");
  const canvas = element("div", "gv-canvas");
  const stage = element("div", "gv-stage");
  const panel = element("aside", "gv-panel");
  stage.append(canvas);
  main.append(stage, panel);
  root.append(bar, tools, main);
  el.append(root);
  // the overlays (where shipped): each adds controls, marks on the graph, panel rows
  const extras = overlays.flatMap((make) => make({ root, bar, tools, main, panel, data, prefix, go, render, view: () => view }) || []);

  const views = new Map();
  let view = null;
  let shown = -1;
  let waiting = null; // a view asked of the kernel, not here yet
  const camera = new Camera(canvas, () => {
    const b = view.box;
    root.dataset.camera = `${b.x} ${b.y} ${b.w} ${b.h}`; // what is on screen, in SVG units
    minimap.update(b, activeBox());
  });
  const minimap = new Minimap((x, y) => {
    setFollow(false);
    const b = view.box;
    camera.set({ ...b, x: x - b.w / 2, y: y - b.h / 2 });
  });
  stage.append(minimap.el);
  // presenting, a stage of another size is framed again (its text kept large), not scaled
  camera.resized = () => {
    if (presenter.presenting()) reframe();
    else if (view && camera.size) view.showBox(camera.size);
  };
  cleanups.push(() => camera.observer && camera.observer.disconnect());

  function setFollow(on) {
    camera.following = on;
    root.dataset.follow = on ? "on" : "off";
    followButton.classList.toggle("gv-on", on);
    followButton.setAttribute("aria-pressed", String(on));
    if (on) follow();
  }

  // The element the active step lights up in this view: its node, or the collapsed module
  // box that holds it; forward frames: the first backward node the op made.
  function activeElement() {
    const index = current();
    const node = index < 0 ? ((forward[index - start] || {}).nodes || [])[0] : (data.steps[index] || {}).node;
    return node ? elementOf(node) : null;
  }

  function elementOf(node) {
    return drawnElement(view, data, prefix, node);
  }

  // Where the backward pass starts (the seed lights nothing up on its own): the camera's
  // first stop, so a big graph does not open on an empty stretch of its layout.
  function firstToRun() {
    const node = (data.steps[1] || {}).node;
    return current() === 0 && node ? elementOf(node) : null;
  }

  // A forward frame in the collapsed view: the op runs inside a module drawn as one box, and
  // backward classes do not apply yet, so the box itself is marked (gv-here).
  let here = null;
  function markHere(index) {
    if (here) here.classList.remove("gv-here");
    here = null;
    if (index >= 0) return;
    const node = ((forward[index - start] || {}).nodes || [])[0];
    const el = node ? elementOf(node) : null;
    if (!el || el.id === `${prefix}_${node}`) return; // the op's own node is drawn: born shows it
    here = el;
    el.classList.add("gv-here");
    root.dataset.here = el.id;
  }

  function activeBox() {
    const el = activeElement();
    return el ? view.geometry.box(el) : null;
  }

  function follow() {
    if (!view) return;
    const el = activeElement() || firstToRun();
    const index = current();
    // a forward frame: the camera frames what is drawn so far, not the whole layout
    const region = index < 0 ? drawnRegion(view, index) : null;
    if (region) camera.frame(region.all, region.newest.length ? region.newest : el ? [view.geometry.box(el)] : []);
    else if (el) camera.focus(view.geometry, el, view.geometry.around(el));
    minimap.update(view.box, el ? view.geometry.box(el) : null);
  }

  // Search results: highlight the matches shown in this view, go to the chosen one's step.
  const highlight = new Highlight();
  function found(matches, at) {
    const e = highlight.show(view, prefix, matches, at, elementOf);
    if (at === null) return;
    root.dataset.found = at;
    const ran = schedule.nodes[`${prefix}_${at}`];
    setFollow(true);
    if (ran !== null && ran !== undefined && ran !== current()) go(ran);
    else if (e) camera.focus(view.geometry, e, []);
  }
  const presenter = new Presenter(root, tools, {
    next: () => go(current() + 1),
    prev: () => go(current() - 1),
    first: () => go(start),
    last: () => go(last),
    fit: () => reframe(),
    narration: (index) =>
      String((index < 0 ? forward[index - start] : data.steps[index] || {})?.narration || ""),
  });
  cleanups.push(() => presenter.close());
  const grads = new GradFields(data.grads || []);
  const quiz = new Quiz(root, tools, canvas, data, (index) => go(index));

  function current() {
    return Math.min(Math.max(Number(model.get("step")) || 0, start), last);
  }

  function showView(name) {
    if (!viewNames.includes(name)) name = viewNames[0];
    if (!svgText(name)) {
      // not laid out yet: the notebook's kernel lays it out (change:svgs brings it)
      waiting = name;
      root.dataset.waiting = name;
      canvas.replaceChildren(element("p", "gv-wait", `laying out the ${name} view…`));
      if (model.send) model.send({ type: "view", name });
      return;
    }
    waiting = null;
    delete root.dataset.waiting;
    if (!views.has(name)) {
      const born = (schedule.born && schedule.born[name]) || (model.get("born") || {})[name];
      views.set(name, new View(svgText(name), name, schedule, born, split));
    }
    const chosen = views.get(name);
    if (chosen === view && canvas.firstChild === view.svg) return;
    view = chosen;
    const collapsed = collapsedViews.includes(name);
    viewSelect.value = collapsed ? "collapsed" : name;
    depthBox.hidden = !collapsed;
    if (collapsed) {
      lastCollapsed = name;
      depthSelect.value = name;
    }
    root.dataset.view = name;
    // the camera is placed before the SVG enters the page: measuring the canvas with a big
    // SVG inside would lay all of it out, and a big view enters with only what is near
    canvas.replaceChildren();
    canvas.style.height = stageHeight(view.home);
    camera.size = null; // measured again once, for this height
    camera.view = view;
    readableText();
    camera.start(view); // before the first placement: a big view never fills in whole
    view.showBox(camera.rect());
    canvas.replaceChildren(view.svg);
    minimap.show(view, camera.scaleFor(view.home) < Camera.readable());
    highlight.clear();
    shown = -1;
    render();
    if (search.matches.length) search.next(found, 0);
  }

  function setView(name) {
    model.set("view", name);
    model.save_changes();
    showView(name);
  }

  // The collapsed module under a pointer event's target in the shown view, or null.
  function boxAt(target) {
    const opens = modules && modules.opens[view.name];
    let g = opens && target && target.closest ? target.closest("g[id]") : null;
    while (g && !opens[g.id]) g = g.parentElement ? g.parentElement.closest("g[id]") : null;
    return g ? g.id : null;
  }

  // Expand a collapsed module: the layout where it is a cluster, same step, zoomed to it.
  function expand(boxId) {
    const info = modules.opens[view.name][boxId];
    setView(info.opens);
    for (const old of view.svg.querySelectorAll(".gv-expanded")) old.classList.remove("gv-expanded");
    root.dataset.expanded = info.module;
    const cluster = view.byId.get(info.cluster);
    if (!cluster) return;
    cluster.classList.add("gv-expanded");
    const g = view.geometry.box(cluster); // from its shapes: no layout
    if (!g.w) return;
    const a = { x: g.x, y: g.y };
    const b = { x: g.x + g.w, y: g.y + g.h };
    // centre the module, never closer than the graph's natural size (1 pt = 4/3 px)
    const area = camera.rect();
    const w = Math.max((b.x - a.x) * 1.5, area.width * 0.75);
    const h = Math.max((b.y - a.y) * 1.5, area.height * 0.75);
    const box = { x: (a.x + b.x - w) / 2, y: (a.y + b.y - h) / 2, w, h };
    camera.set(w >= view.home.w && h >= view.home.h ? { ...view.home } : box);
  }

  function render() {
    const index = current();
    if (!view) return;
    if (index !== shown) {
      view.apply(index);
      shown = index;
      follow();
      markHere(index);
    }
    root.dataset.step = String(index);
    slider.value = String(index);
    counter.textContent =
      index < 0 ? `forward ${index - start + 1} / ${forward.length}` : `step ${index} / ${last}`;
    root.dataset.phase = index < 0 ? "forward" : "backward";
    first.disabled = prev.disabled = index === start;
    next.disabled = end.disabled = index === last;
    if (index < 0) fillForward(panel, forward[index - start] || {}, sourceOf(data, index, start));
    else fillPanel(panel, data.steps[index] || {}, index, sourceOf(data, index, start));
    if (presenter) presenter.update(index);
    if (grads) grads.apply(view, index);
    const extraRows = [];
    for (const x of extras) x.update(view, index, extraRows);
    panel.append(...extraRows);
  }

  function go(index) {
    const target = Math.min(Math.max(index, start), last);
    if (target === current()) return;
    if (quiz.intercepts(current(), target)) return;
    model.set("step", target);
    model.save_changes();
    render();
  }

  // -- play --
  const player = new Player(root, play, speed, STEP_MS, {
    atEnd: () => current() >= last,
    restart: () => current() === last && go(start),
    step: () => go(current() + 1),
  });
  const toggle = () => player.toggle();
  cleanups.push(() => player.stop());

  // -- keys --
  const onKey = (event) => {
    const tag = event.target && event.target.tagName;
    const checkbox = tag === "INPUT" && event.target.type === "checkbox"; // keys still step
    if ((tag === "INPUT" && !checkbox) || tag === "SELECT" || tag === "TEXTAREA") return;
    if (keyHelp.key(event)) return; // ? shows the key table, ? or Escape hides it
    if (presenter.key(event)) return;
    if (extras.some((x) => x.key(event))) return; // m memory, h health, d first difference
    if (runTo.key(event)) return root.classList.remove("gv-blank"); // n > < i t: run to
    const action = stepAction(event.key, tag, checkbox);
    if (action === null) return;
    event.preventDefault();
    if (action !== "help") root.classList.remove("gv-blank"); // a move shows a blanked screen
    act[action]();
  };
  const keyHelp = new KeyHelp(root);
  cleanups.push(routeKeys(root, onKey));

  // -- zoom and pan (a CSS transform only: the layout never changes) --
  function zoom(factor, cx, cy, byHand) {
    if (byHand) setFollow(false);
    camera.set(zoomed(view.box, factor, cx, cy));
  }
  // Fit: the whole view; presenting, only as far as the text stays readable from afar.
  function resetZoom() {
    if (presenter.presenting()) return reframe();
    setFollow(false);
    camera.set({ ...view.home });
  }
  // How small the camera lets text get: presenting, large enough for the back of the room
  // (even the view's smallest node text), else MIN_TEXT_PX on node labels.
  function readableText() {
    const on = presenter.presenting();
    camera.textPx = on ? presentTextPx(window.innerHeight || 720) : MIN_TEXT_PX;
    camera.font = on && view ? view.geometry.smallestFont(NODE_FONT) : NODE_FONT;
  }
  // The stage changed size (presentation mode, a resize): the whole view when it is
  // readable there, else the camera follows the active node again; a forward frame
  // frames what is drawn so far.
  function reframe() {
    if (!view) return;
    readableText();
    if (current() < 0) setFollow(true);
    else if (camera.scaleFor(view.home) >= camera.readable()) camera.set({ ...view.home });
    else {
      camera.start(view);
      setFollow(true);
    }
  }
  onPointer(canvas, {
    view: () => view,
    camera,
    zoom,
    pan: () => setFollow(false),
    box: (target) => boxAt(target),
    expand: (box) => expand(box),
    node: (nodeElement) => jumpTo(nodeElement),
  });
  // A click on a node: go to the step it ran at.
  function jumpTo(nodeElement) {
    if (quiz.asking !== null) return; // the click answers the quiz's question instead
    const ran = schedule.nodes[nodeElement.id];
    if (ran === null || ran === undefined) return;
    setFollow(true);
    go(ran);
  }
  function download() {
    const text = stepSvgText(view, css, labels.checked);
    downloadSvg(root, text, current(), start);
  }

  cleanups.push(followTheme(root));

  const onStep = () => render();
  const onView = () => showView(model.get("view"));
  const onSvgs = () => {
    if (waiting && svgText(waiting)) showView(waiting);
  };
  model.on("change:step", onStep);
  model.on("change:view", onView);
  model.on("change:svgs", onSvgs);
  cleanups.push(() => {
    model.off("change:step", onStep);
    model.off("change:view", onView);
    model.off("change:svgs", onSvgs);
  });

  setFollow(true);
  showView(model.get("view") || "backward");
  if (features.camera && view) {
    setFollow(false);
    camera.set({ ...features.camera });
  }
  exposeState(root, () => view, current);
  return () => {
    for (const undo of cleanups) undo();
    root.remove();
  };
}
