// gradviz stepper: replays a recorded backward pass on an SVG laid out once.
//
// Stepping only toggles CSS classes on SVG elements found by id (DESIGN §7): no layout and
// no kernel round trip per step. The same module serves the notebook widget (anywidget's
// `render({model, el})`) and the standalone HTML page (`mountStandalone()`, which feeds it
// a small local model). Every string from the recording reaches the page as text
// (textContent), never as markup; the SVGs are parsed as XML and stripped of anything active.
//
// Steps: 0 is the seed, 1..N the backward steps. A recording made under gradviz.watch() also
// has forward frames -F..-1 before the seed (data.first = -F), one per forward op: elements
// appear (schedule.born[view]: the step an element is made at) as the code builds the graph.
//
// Module views (data.modules, under gradviz.watch(model)): "modules" draws one cluster per
// module; "collapsed-D" draws every module deeper than D as one box (schedule.boxes: the steps
// at which a node inside it runs). Clicking a box expands it: the stepper switches to the
// next depth's layout (or "modules"), where that module is a cluster, at the same step, and
// zooms to it; the depth control goes back.

const REPLAY_CLASSES = [
  "gv_done",
  "gv_active",
  "gv_pending",
  "gv_notrun",
  "gv_hidegrad",
  "gv_flowing",
  "gv_future",
  "gv_born",
  "gv_partial",
  "gv_nonfinite",
];
const SPEEDS = [0.5, 1, 2, 4];
const STEP_MS = 1000;
const SCOPE = "#GVROOT";
let mounted = 0;

// The class rules; gradviz.replay.classes_at is the Python reference and a test compares them.
export function nodeClass(ran, index) {
  if (index < 0) return ""; // a forward frame: backward has not started
  if (ran === null || ran === undefined) return "gv_notrun";
  if (ran < index) return "gv_done";
  return ran === index ? "gv_active" : "gv_pending";
}

// A collapsed module from its members' (sorted) steps, as gradviz.replay.box_class.
export function boxClass(steps, index) {
  if (index < 0) return "";
  if (!steps.length) return "gv_notrun";
  if (index < steps[0]) return "gv_pending";
  if (index > steps[steps.length - 1]) return "gv_done";
  return steps.includes(index) ? "gv_active" : "gv_partial";
}

export function flowClass(at, index) {
  if (at > index) return "gv_hidegrad";
  return at === index ? "gv_flowing" : "";
}

export function bornClass(at, index) {
  if (index < at) return "gv_future";
  return at === index ? "gv_born" : "";
}

// Every scheduled element's classes at `index` in `view`, "" where it has none; several
// classes are joined by a space, the backward one first (as gradviz.replay.classes_at).
function elementClasses(schedule, index, view) {
  const out = new Map();
  for (const [id, ran] of Object.entries(schedule.nodes)) out.set(id, nodeClass(ran, index));
  for (const [id, steps] of Object.entries(schedule.boxes || {})) out.set(id, boxClass(steps, index));
  for (const group of ["edges", "links"]) {
    for (const [id, at] of Object.entries(schedule[group])) out.set(id, flowClass(at, index));
  }
  const born = (schedule.born && schedule.born[view]) || {};
  for (const [id, at] of Object.entries(born)) {
    const had = out.get(id) || "";
    const extra = bornClass(at, index);
    out.set(id, had && extra ? `${had} ${extra}` : had || extra);
  }
  // where NaN or Inf first appeared, marked from that step on (schedule.nonfinite)
  for (const [id, at] of Object.entries(schedule.nonfinite || {})) {
    const had = out.get(id) || "";
    if (index >= at) out.set(id, had ? `${had} gv_nonfinite` : "gv_nonfinite");
  }
  return out;
}

export function classesAt(schedule, index, view = "backward") {
  const out = {};
  for (const [id, cls] of elementClasses(schedule, index, view)) if (cls) out[id] = cls;
  return out;
}

// Parse an SVG as XML (scripts never run) and drop anything that could act.
function parseSvg(text) {
  const doc = new DOMParser().parseFromString(text, "image/svg+xml");
  const svg = doc.documentElement;
  if (!svg || svg.nodeName !== "svg") throw new Error("gradviz: the replay's SVG did not parse");
  for (const bad of svg.querySelectorAll("script, foreignObject, iframe")) bad.remove();
  for (const node of svg.querySelectorAll("*")) {
    for (const attr of [...node.attributes]) {
      const name = attr.name.toLowerCase();
      const value = attr.value.trim().toLowerCase();
      if (name.startsWith("on") || (name.endsWith("href") && value.startsWith("javascript:"))) {
        node.removeAttribute(attr.name);
      }
    }
  }
  return document.importNode(svg, true);
}

function button(label, title, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "gv-btn";
  b.textContent = label;
  b.title = title;
  b.setAttribute("aria-label", title);
  b.addEventListener("click", onClick);
  return b;
}

function element(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

function pageIsDark() {
  const body = document.body;
  const light = body ? body.getAttribute("data-jp-theme-light") : null;
  if (light !== null) return light === "false";
  return !!(window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches);
}

// One view's SVG, parsed on first use, with its elements indexed by id within this stepper
// only (two steppers of the same recording on one page share ids, never lookups).
class View {
  constructor(text, name) {
    this.name = name;
    this.svg = parseSvg(text);
    this.byId = new Map();
    for (const e of this.svg.querySelectorAll("[id]")) {
      this.byId.set(e.id, e);
      e.classList.remove(...REPLAY_CLASSES); // shipped styled for one step; we own them now
    }
    this.current = new Map();
    const vb = (this.svg.getAttribute("viewBox") || "0 0 100 100").split(/[\s,]+/).map(Number);
    this.home = { x: vb[0], y: vb[1], w: vb[2], h: vb[3] };
    this.size = [this.svg.getAttribute("width"), this.svg.getAttribute("height")];
    this.box = { ...this.home };
    this.svg.setAttribute("width", "100%");
    this.svg.setAttribute("height", "100%");
    this.svg.setAttribute("preserveAspectRatio", "xMidYMid meet");
  }

  setClass(id, want) {
    const el = this.byId.get(id);
    if (!el) return;
    const had = this.current.get(id) || "";
    if (had === want) return;
    if (had) el.classList.remove(...had.split(" "));
    if (want) el.classList.add(...want.split(" "));
    this.current.set(id, want);
  }

  apply(schedule, index) {
    for (const [id, cls] of elementClasses(schedule, index, this.name)) this.setClass(id, cls);
  }

  showBox() {
    const b = this.box;
    this.svg.setAttribute("viewBox", `${b.x} ${b.y} ${b.w} ${b.h}`);
  }
}

// -- the classroom (#17): the stage's height, key routing, presentation mode -----------------

// The stage takes the window's height (less the toolbars), whatever the graph's own size:
// the SVG is scaled to fit ("meet"), so a small graph fills the stage instead of a corner.
function stageHeight(home) {
  const natural = home.h * (4 / 3); // Graphviz sizes in pt; CSS px are 3/4 pt
  const room = Math.max(240, (window.innerHeight || 800) - 150);
  return `${Math.round(Math.max(Math.min(room, Math.max(natural, 0.75 * room)), 180))}px`;
}

// Keys reach a stepper without a click first: the document routes them to the stepper that
// has the focus, else the one under the pointer, else the page's stepper (focused on load).
// Buttons that become disabled (First, Last) drop the focus; the keys keep working.
let keyTarget = null; // the stepper the keys go to when focus is nowhere in particular
let hovered = null;
const keyHandlers = new Map();
function activate(root, focus = false) {
  keyTarget = root;
  if (focus && root) root.focus({ preventScroll: true });
}
function routeKeys(root, handler) {
  keyHandlers.set(root, handler);
  const enter = () => (hovered = root);
  const leave = () => hovered === root && (hovered = null);
  const take = () => activate(root);
  root.addEventListener("pointerenter", enter);
  root.addEventListener("pointerleave", leave);
  root.addEventListener("focusin", take);
  root.addEventListener("pointerdown", take);
  if (keyHandlers.size === 1) document.addEventListener("keydown", dispatchKey);
  return () => {
    keyHandlers.delete(root);
    if (keyTarget === root) keyTarget = null;
    if (hovered === root) hovered = null;
    if (!keyHandlers.size) document.removeEventListener("keydown", dispatchKey);
  };
}
function dispatchKey(event) {
  if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
  const focused = document.activeElement;
  let target = null;
  for (const root of keyHandlers.keys()) if (root.contains(focused)) target = root;
  const typing =
    focused && (focused.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(focused.tagName));
  if (!target && typing) return; // a notebook cell being edited keeps its keys
  if (!target && hovered && keyHandlers.has(hovered)) target = hovered;
  const idle = !focused || focused === document.body || focused === document.documentElement;
  if (!target && idle && keyTarget && keyHandlers.has(keyTarget)) target = keyTarget;
  if (!target) return;
  keyHandlers.get(target)(event);
  if (event.defaultPrevented) event.stopPropagation(); // JupyterLab must not act on it too
}

// Presentation mode: the "Present" button or F; the graph fills the screen with the
// narration as a large caption; clickers (PageDown/PageUp, arrows, Space) step; B or "."
// blanks the screen; Escape leaves. Also the text-size control, in every mode.
const TEXT_SIZES = [1, 1.25, 1.5, 2];
class Presenter {
  constructor(root, tools, actions) {
    this.root = root;
    this.actions = actions;
    this.caption = element("div", "gv-caption");
    this.caption.setAttribute("aria-live", "polite");
    root.append(this.caption);
    this.button = button("Present", "Presentation mode: full screen, large caption (F; Esc leaves)", () =>
      this.toggle(),
    );
    this.button.classList.add("gv-present-btn");
    const sizeBox = element("label", "gv-textsize", "text ");
    this.size = element("select", "gv-textsize-select");
    this.size.title = "Text size";
    for (const s of TEXT_SIZES) {
      const o = element("option", "", `${Math.round(s * 100)}%`);
      o.value = String(s);
      this.size.append(o);
    }
    this.size.addEventListener("change", () => this.setTextScale(Number(this.size.value)));
    sizeBox.append(this.size);
    tools.append(sizeBox);
    root.querySelector(".gv-toolbar").append(this.button);
    this.onResize = () => actions.fit();
    this.onFullscreen = () => {
      if (!document.fullscreenElement && this.presenting()) this.leave();
    };
    document.addEventListener("fullscreenchange", this.onFullscreen);
  }

  presenting() {
    return this.root.classList.contains("gv-present");
  }

  setTextScale(scale) {
    this.root.style.setProperty("--gv-text-scale", String(scale));
    this.size.value = String(scale);
  }

  enter() {
    this.root.classList.add("gv-present");
    this.root.focus({ preventScroll: true });
    activate(this.root);
    window.addEventListener("resize", this.onResize);
    // real full screen where allowed (needs a user gesture); the fixed stage works without
    if (this.root.requestFullscreen && !document.fullscreenElement) {
      this.root.requestFullscreen().catch(() => {});
    }
    this.actions.fit();
  }

  leave() {
    if (!this.presenting()) return;
    this.root.classList.remove("gv-present", "gv-blank");
    window.removeEventListener("resize", this.onResize);
    if (document.fullscreenElement === this.root && document.exitFullscreen) {
      document.exitFullscreen().catch(() => {});
    }
    this.actions.fit();
  }

  toggle() {
    if (this.presenting()) this.leave();
    else this.enter();
  }

  update(index) {
    this.caption.textContent = this.actions.narration(index);
  }

  // The presentation keys; true when the key was used.
  key(event) {
    const k = event.key;
    if (k === "f" || k === "F") return this.use(event, () => this.toggle());
    if (!this.presenting()) return false;
    const blank = this.root.classList.contains("gv-blank");
    if (k === "+" || k === "=" || k === "-") {
      const at = TEXT_SIZES.indexOf(Number(this.size.value));
      const to = Math.min(Math.max(at + (k === "-" ? -1 : 1), 0), TEXT_SIZES.length - 1);
      return this.use(event, () => this.setTextScale(TEXT_SIZES[to]));
    }
    if (k === "b" || k === "B" || k === ".") {
      return this.use(event, () => this.root.classList.toggle("gv-blank"));
    }
    if (k === "Escape") {
      return this.use(event, () => (blank ? this.root.classList.remove("gv-blank") : this.leave()));
    }
    const moves = {
      PageDown: "next",
      ArrowRight: "next",
      ArrowDown: "next",
      " ": "next",
      Enter: "next",
      PageUp: "prev",
      ArrowLeft: "prev",
      ArrowUp: "prev",
      Backspace: "prev",
      Home: "first",
      End: "last",
    };
    const move = moves[k];
    if (!move) return false;
    return this.use(event, () => {
      this.root.classList.remove("gv-blank");
      this.actions[move]();
    });
  }

  use(event, action) {
    event.preventDefault();
    action();
    return true;
  }

  close() {
    this.leave();
    document.removeEventListener("fullscreenchange", this.onFullscreen);
  }
}

// The tensor records' grad field during the replay: None until the leaf's AccumulateGrad
// runs, then the value it wrote (c.grad None -> 36), as in the lectures' combined view.
class GradFields {
  constructor(updates) {
    this.updates = updates;
  }
  apply(view, index) {
    for (const u of this.updates) {
      const box = view.byId.get(u.id);
      if (!box) continue;
      const texts = [...box.querySelectorAll("text")];
      const key = texts.findIndex((t) => t.textContent === "grad");
      if (key < 0 || key + 1 >= texts.length) continue;
      const field = texts[key + 1];
      field.textContent = index >= u.step ? u.after : u.before;
      field.classList.toggle("gv-grad-new", index === u.step);
    }
  }
}

// Predict, then reveal: with the quiz on, each backward step first asks which node runs next
// (click it) and, for scalar lessons, what gradient it sends; then it shows the step, grades
// the answer against the recorded order and values, says why, and keeps the score.
class Quiz {
  constructor(root, tools, canvas, data, go) {
    this.root = root;
    this.data = data;
    this.answers = data.quiz || [];
    this.go = go;
    this.on = false;
    this.revealed = new Set();
    this.asking = null; // the step asked about
    this.choice = null;
    this.score = { right: 0, asked: 0 };
    const box = element("label", "gv-quizbox");
    this.toggle = element("input", "gv-quiz-toggle");
    this.toggle.type = "checkbox";
    this.toggle.addEventListener("change", () => this.setOn(this.toggle.checked));
    box.append(this.toggle, document.createTextNode(" quiz"));
    tools.append(box);
    this.card = element("div", "gv-quiz");
    this.card.hidden = true;
    this.prompt = element("div", "gv-quiz-prompt");
    this.number = element("input", "gv-quiz-number");
    this.number.type = "text";
    this.number.inputMode = "decimal";
    this.number.placeholder = "gradient it sends";
    this.reveal = button("Reveal", "Show the step and grade the answer", () => this.grade());
    this.reveal.classList.add("gv-quiz-reveal");
    this.number.addEventListener("keydown", (event) => {
      if (event.key === "Enter") this.grade();
    });
    this.verdict = element("div", "gv-quiz-verdict");
    this.tally = element("div", "gv-quiz-score");
    this.card.append(this.prompt, this.number, this.reveal, this.verdict, this.tally);
    root.insertBefore(this.card, root.querySelector(".gv-main"));
    canvas.addEventListener("click", (event) => this.pick(event));
  }

  setOn(on) {
    this.on = on;
    this.toggle.checked = on;
    this.card.hidden = !on;
    this.root.classList.toggle("gv-quizzing", on);
    if (!on) this.asking = null;
    this.showScore();
  }

  // Called before every move: a step forward the student has not predicted becomes a question.
  intercepts(from, to) {
    if (!this.on || to !== from + 1 || to < 1 || this.revealed.has(to)) return false;
    const answer = this.answers[to - 1];
    if (!answer) return false;
    this.asking = to;
    this.choice = null;
    this.prompt.textContent = `Step ${to}: which node runs next? Click it on the graph.`;
    this.number.hidden = answer.value === null || answer.value === undefined;
    this.number.value = "";
    this.verdict.textContent = "";
    this.root.dataset.quiz = "asking";
    return true;
  }

  pick(event) {
    if (this.asking === null) return;
    const node = event.target.closest && event.target.closest("g.node[id]");
    if (!node) return;
    for (const e of this.root.querySelectorAll(".gv-quiz-choice")) e.classList.remove("gv-quiz-choice");
    node.classList.add("gv-quiz-choice");
    this.choice = node.id;
    const label = node.querySelector("text");
    this.prompt.textContent = `Step ${this.asking}: you chose ${label ? label.textContent : node.id}.`;
    if (this.number.hidden) this.grade();
    else this.number.focus();
  }

  grade() {
    const step = this.asking;
    if (step === null || this.choice === null) {
      this.verdict.textContent = "Click the node you think runs next first.";
      return;
    }
    const answer = this.answers[step - 1];
    const nodeRight = this.choice === answer.node;
    let valueRight = true;
    let valueText = "";
    if (!this.number.hidden) {
      const given = Number(this.number.value.trim());
      const want = answer.value;
      valueRight = this.number.value.trim() !== "" && Math.abs(given - want) <= 1e-6 * Math.max(1, Math.abs(want));
      valueText = valueRight ? ` It sends ${want}: right.` : ` It sends ${want}, not ${this.number.value.trim() || "(nothing)"}.`;
    }
    const right = nodeRight && valueRight;
    this.score.asked += 1;
    if (right) this.score.right += 1;
    const ready = answer.ready.map((r) => `${r.type} (seq ${r.seq})`).join(", ");
    const why =
      `Ready then: ${ready}. The engine runs the ready node with the highest sequence number: ${answer.type}.`;
    const narration = String((this.data.steps[step] || {}).narration || "");
    this.verdict.textContent = `${nodeRight ? "Right node." : "Wrong node."}${valueText} ${why} ${narration}`;
    this.root.dataset.quiz = right ? "right" : "wrong";
    for (const e of this.root.querySelectorAll(".gv-quiz-choice")) e.classList.remove("gv-quiz-choice");
    this.asking = null;
    this.revealed.add(step);
    this.showScore();
    this.go(step);
  }

  showScore() {
    this.tally.textContent = `score ${this.score.right} / ${this.score.asked}`;
  }
}

// Mount a stepper into `el`; `model` is anywidget's model or the standalone page's stand-in.
export function mount(el, model) {
  const svgs = model.get("svgs");
  const data = model.get("data");
  const css = model.get("css");
  const schedule = data.schedule;
  const last = data.count - 1;
  const forward = data.forward || []; // the forward frames' panels (under watch())
  const modules = data.modules || null; // module views: collapsed depths and what boxes open
  const collapsedViews = modules ? modules.collapsed : [];
  let lastCollapsed = modules ? modules.default : null;
  const start = Number(data.first) || 0; // -F, or 0 (the seed) without forward frames
  // unique even if the module is loaded twice on one page (the scoped stylesheet uses it)
  const id = `gvs${++mounted}-${Math.random().toString(36).slice(2, 8)}`;
  const cleanups = [];

  const root = element("div", "gv-stepper");
  root.dataset.gvMount = id;
  root.tabIndex = 0;
  const style = document.createElement("style");
  style.textContent = String(css.scoped || "").split(SCOPE).join(`.gv-stepper[data-gv-mount="${id}"]`);
  root.append(style);

  // -- controls --
  const bar = element("div", "gv-toolbar");
  const first = button("« First", "First step (Home)", () => go(start));
  const prev = button("‹ Prev", "Previous step (←)", () => go(current() - 1));
  const play = button("▶ Play", "Play / pause (space)", () => toggle());
  play.classList.add("gv-play");
  const next = button("Next ›", "Next step (→)", () => go(current() + 1));
  const end = button("Last »", "Last step (End)", () => go(last));
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
  slider.addEventListener("input", () => go(Number(slider.value)));
  const counter = element("span", "gv-counter");
  counter.setAttribute("aria-live", "polite");
  bar.append(first, prev, play, next, end, speed, slider, counter);

  const tools = element("div", "gv-toolbar gv-tools");
  const viewSelect = element("select", "gv-view");
  viewSelect.title = "View";
  for (const name of Object.keys(svgs)) {
    if (collapsedViews.includes(name) && name !== collapsedViews[0]) continue;
    const choice = collapsedViews.includes(name) ? "collapsed" : name;
    const o = element("option", "", choice);
    o.value = choice;
    viewSelect.append(o);
  }
  viewSelect.addEventListener("change", () => {
    setView(viewSelect.value === "collapsed" ? lastCollapsed : viewSelect.value);
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
  depthSelect.addEventListener("change", () => setView(depthSelect.value));
  depthBox.append(depthSelect);
  depthBox.hidden = true;
  const labelsBox = element("label", "gv-labels");
  const labels = element("input");
  labels.type = "checkbox";
  labels.checked = true;
  labels.addEventListener("change", () => root.classList.toggle("gv-nolabels", !labels.checked));
  labelsBox.append(labels, document.createTextNode(" gradient labels"));
  const zoomIn = button("+", "Zoom in (or Ctrl + wheel)", () => zoom(1 / 1.25));
  const zoomOut = button("−", "Zoom out", () => zoom(1.25));
  const fit = button("Fit", "Fit the graph to the view", () => resetZoom());
  fit.classList.add("gv-fit");
  const download = button("Download SVG", "Download this step as SVG", () => downloadSvg());
  download.classList.add("gv-download");
  tools.append(viewSelect);
  if (collapsedViews.length) tools.append(depthBox);
  tools.append(labelsBox, zoomOut, zoomIn, fit, download);

  // -- graph and panel --
  const main = element("div", "gv-main");
  const canvas = element("div", "gv-canvas");
  const panel = element("aside", "gv-panel");
  main.append(canvas, panel);
  root.append(bar, tools, main);
  el.append(root);

  const views = new Map();
  let view = null;
  let shown = -1;
  const presenter = new Presenter(root, tools, {
    next: () => go(current() + 1),
    prev: () => go(current() - 1),
    first: () => go(start),
    last: () => go(last),
    fit: () => resetZoom(),
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
    if (!svgs[name]) name = Object.keys(svgs)[0];
    if (!views.has(name)) views.set(name, new View(svgs[name], name));
    const chosen = views.get(name);
    if (chosen === view) return;
    view = chosen;
    const collapsed = collapsedViews.includes(name);
    viewSelect.value = collapsed ? "collapsed" : name;
    depthBox.hidden = !collapsed;
    if (collapsed) {
      lastCollapsed = name;
      depthSelect.value = name;
    }
    root.dataset.view = name;
    canvas.replaceChildren(view.svg);
    canvas.style.height = stageHeight(view.home);
    view.showBox();
    shown = -1;
    render();
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
    const m = view.svg.getScreenCTM();
    const rect = cluster.getBoundingClientRect();
    if (!m || !rect.width) return;
    const inv = m.inverse();
    const a = new DOMPoint(rect.left, rect.top).matrixTransform(inv);
    const b = new DOMPoint(rect.right, rect.bottom).matrixTransform(inv);
    // centre the module, never closer than the graph's natural size (1 pt = 4/3 px)
    const area = canvas.getBoundingClientRect();
    const w = Math.max((b.x - a.x) * 1.5, area.width * 0.75);
    const h = Math.max((b.y - a.y) * 1.5, area.height * 0.75);
    const box = { x: (a.x + b.x - w) / 2, y: (a.y + b.y - h) / 2, w, h };
    view.box = w >= view.home.w && h >= view.home.h ? { ...view.home } : box;
    view.showBox();
  }

  function render() {
    const index = current();
    if (index !== shown) {
      view.apply(schedule, index);
      shown = index;
    }
    root.dataset.step = String(index);
    slider.value = String(index);
    counter.textContent =
      index < 0 ? `forward ${index - start + 1} / ${forward.length}` : `step ${index} / ${last}`;
    root.dataset.phase = index < 0 ? "forward" : "backward";
    first.disabled = prev.disabled = index === start;
    next.disabled = end.disabled = index === last;
    if (index < 0) fillForward(forward[index - start] || {});
    else fillPanel(data.steps[index] || {}, index);
    if (presenter) presenter.update(index);
    if (grads) grads.apply(view, index);
  }

  function go(index) {
    const target = Math.min(Math.max(index, start), last);
    if (target === current()) return;
    if (quiz.intercepts(current(), target)) return;
    model.set("step", target);
    model.save_changes();
    render();
  }

  function fillPanel(step, index) {
    const parts = [];
    const head = element("div", "gv-panel-head");
    head.append(element("span", "gv-panel-index", index === 0 ? "seed" : `step ${index}`));
    head.append(element("span", "gv-panel-type", step.type || ""));
    parts.push(head);
    if (step.module) parts.push(row("module", String(step.module)));
    if (step.forward) parts.push(row("forward op", String(step.forward)));
    else if (step.op && index > 0) parts.push(row("op", String(step.op)));
    if (step.received && step.received.length) parts.push(list("received", step.received.map(String)));
    if (step.sent && step.sent.length) {
      parts.push(list("sent", step.sent.map((s) => `${s.slot} → ${s.to}: ${s.value}`)));
    }
    parts.push(element("p", "gv-narration", step.narration || ""));
    // a user's hook changed a gradient here: say so, with the value before and after
    const hooks = step.hooks || [];
    for (const change of hooks) parts.push(element("p", "gv-warning", String(change)));
    if (step.flow_ok === false && !hooks.length) {
      parts.push(element("p", "gv-warning", "flow check failed"));
    }
    if (step.checked === false) {
      // explain.py falls back to a plain sentence when a formula disagrees; unchecked means
      // the saved tensors it needs were already freed, so the numbers could not be verified.
      parts.push(element("p", "gv-note", "formula not checked: its saved tensors were freed " +
        "(record with retain_graph=True to check it against the recorded numbers)"));
    }
    panel.replaceChildren(...parts);
  }

  // A forward frame: which op ran, at which line, what it made and what autograd recorded.
  function fillForward(op) {
    const parts = [];
    const head = element("div", "gv-panel-head");
    head.append(element("span", "gv-panel-index", `forward ${op.index || ""}`));
    head.append(element("span", "gv-panel-type", op.recorded || op.type || ""));
    parts.push(head);
    if (op.code) parts.push(row("code", String(op.code)));
    if (op.line) parts.push(row("line", String(op.line)));
    if (op.outputs && op.outputs.length) parts.push(list("made", op.outputs.map(String)));
    parts.push(element("p", "gv-narration", op.narration || ""));
    panel.replaceChildren(...parts);
  }

  function row(key, value) {
    const r = element("div", "gv-row");
    r.append(element("span", "gv-key", key), element("span", "gv-value", value));
    return r;
  }

  function list(key, items) {
    const box = element("div", "gv-row");
    box.append(element("span", "gv-key", key));
    const ul = element("ul", "gv-list");
    for (const item of items) ul.append(element("li", "", item));
    box.append(ul);
    return box;
  }

  // -- play --
  let timer = null;
  function stopPlay() {
    if (timer !== null) clearInterval(timer);
    timer = null;
    play.textContent = "▶ Play";
    root.classList.remove("gv-playing");
  }
  function toggle() {
    if (timer !== null) return stopPlay();
    if (current() === last) go(start);
    play.textContent = "⏸ Pause";
    root.classList.add("gv-playing");
    timer = setInterval(() => {
      if (current() >= last) return stopPlay();
      go(current() + 1);
    }, STEP_MS / Number(speed.value));
  }
  speed.addEventListener("change", () => {
    if (timer !== null) {
      stopPlay();
      toggle();
    }
  });
  cleanups.push(stopPlay);

  // -- keys --
  const onKey = (event) => {
    const tag = event.target && event.target.tagName;
    const box = tag === "INPUT" && event.target.type === "checkbox"; // keys still step
    if ((tag === "INPUT" && !box) || tag === "SELECT" || tag === "TEXTAREA") return;
    if (presenter.key(event)) return;
    const keys = {
      PageDown: () => go(current() + 1),
      PageUp: () => go(current() - 1),
      ArrowRight: () => go(current() + 1),
      ArrowDown: () => go(current() + 1),
      ArrowLeft: () => go(current() - 1),
      ArrowUp: () => go(current() - 1),
      Home: () => go(start),
      End: () => go(last),
      " ": () => toggle(),
    };
    const action = keys[event.key];
    if (!action || (event.key === " " && tag === "BUTTON")) return;
    event.preventDefault();
    action();
  };
  cleanups.push(routeKeys(root, onKey));

  // -- zoom and pan (viewBox only: the layout never changes) --
  function zoom(factor, cx, cy) {
    const b = view.box;
    const x = cx === undefined ? b.x + b.w / 2 : cx;
    const y = cy === undefined ? b.y + b.h / 2 : cy;
    view.box = { x: x - (x - b.x) * factor, y: y - (y - b.y) * factor, w: b.w * factor, h: b.h * factor };
    view.showBox();
  }
  function resetZoom() {
    view.box = { ...view.home };
    view.showBox();
  }
  function toGraph(event) {
    const m = view.svg.getScreenCTM();
    if (!m) return [undefined, undefined];
    const p = new DOMPoint(event.clientX, event.clientY).matrixTransform(m.inverse());
    // getScreenCTM maps the root viewport; the viewBox is in the same user units
    return [p.x, p.y];
  }
  canvas.addEventListener(
    "wheel",
    (event) => {
      if (!event.ctrlKey && !event.metaKey) return;
      event.preventDefault();
      const [x, y] = toGraph(event);
      zoom(event.deltaY > 0 ? 1.15 : 1 / 1.15, x, y);
    },
    { passive: false },
  );
  let drag = null;
  canvas.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    drag = { x: event.clientX, y: event.clientY, box: { ...view.box }, hit: boxAt(event.target) };
    canvas.setPointerCapture(event.pointerId);
  });
  canvas.addEventListener("pointermove", (event) => {
    if (!drag) return;
    const rect = canvas.getBoundingClientRect();
    const scale = Math.max(drag.box.w / rect.width, drag.box.h / rect.height);
    view.box = {
      ...drag.box,
      x: drag.box.x - (event.clientX - drag.x) * scale,
      y: drag.box.y - (event.clientY - drag.y) * scale,
    };
    view.showBox();
  });
  const endDrag = () => {
    drag = null;
  };
  canvas.addEventListener("pointerup", (event) => {
    // a click (not a drag) on a collapsed module expands it
    const hit = drag && drag.hit;
    const still = drag && Math.abs(event.clientX - drag.x) + Math.abs(event.clientY - drag.y) < 5;
    endDrag();
    if (hit && still) expand(hit);
  });
  canvas.addEventListener("pointercancel", endDrag);

  // -- download the current step: its classes and the stylesheet inlined --
  function stepSvgText() {
    const clone = view.svg.cloneNode(true);
    const [w, h] = view.size;
    if (w) clone.setAttribute("width", w);
    if (h) clone.setAttribute("height", h);
    const b = view.home;
    clone.setAttribute("viewBox", `${b.x} ${b.y} ${b.w} ${b.h}`);
    const sheet = document.createElementNS("http://www.w3.org/2000/svg", "style");
    sheet.textContent = String(css.plain || "") + (labels.checked ? "" : ".gv_grad{display:none}");
    clone.insertBefore(sheet, clone.firstChild);
    return new XMLSerializer().serializeToString(clone);
  }
  function downloadSvg() {
    const blob = new Blob([stepSvgText()], { type: "image/svg+xml" });
    const url = URL.createObjectURL(blob);
    const a = element("a");
    a.href = url;
    const index = current();
    const number = (n) => String(n).padStart(3, "0");
    const name = index < 0 ? `forward-${number(index - start + 1)}` : `step-${number(index)}`;
    a.download = `gradviz-${name}.svg`;
    root.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  // -- theme: follow JupyterLab (body[data-jp-theme-light]) or the system's preference --
  const applyTheme = () => root.classList.toggle("gv-dark", pageIsDark());
  applyTheme();
  if (document.body && window.MutationObserver) {
    const observer = new MutationObserver(applyTheme);
    observer.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-light"] });
    cleanups.push(() => observer.disconnect());
  }

  const onStep = () => render();
  const onView = () => showView(model.get("view"));
  model.on("change:step", onStep);
  model.on("change:view", onView);
  cleanups.push(() => {
    model.off("change:step", onStep);
    model.off("change:view", onView);
  });

  showView(model.get("view") || "backward");
  return () => {
    for (const undo of cleanups) undo();
    root.remove();
  };
}

// anywidget's entry point. Once the live stepper shows, the static picture published
// beside it for places where widgets do not run (an exported page) steps aside.
export function render({ model, el }) {
  const fallback = String(model.get("fallback") || "");
  if (fallback) {
    for (const e of document.querySelectorAll(".gv-static[data-gv-fallback]")) {
      if (e.getAttribute("data-gv-fallback") === fallback) e.style.display = "none";
    }
  }
  return mount(el, model);
}

export default { render };

// A model with anywidget's surface for the standalone page: local state, no kernel.
export class LocalModel {
  constructor(state) {
    this.state = { ...state };
    this.handlers = new Map();
  }
  get(key) {
    return this.state[key];
  }
  set(key, value) {
    if (this.state[key] === value) return;
    this.state[key] = value;
    for (const fn of this.handlers.get(`change:${key}`) || []) fn();
  }
  save_changes() {}
  on(event, fn) {
    if (!this.handlers.has(event)) this.handlers.set(event, new Set());
    this.handlers.get(event).add(fn);
  }
  off(event, fn) {
    const set = this.handlers.get(event);
    if (set) set.delete(fn);
  }
}

// The standalone page: each <script type="application/json" class="gv-replay-data"> holds
// one replay; mount it right after the script.
export function mountStandalone(doc = document) {
  const steppers = [];
  for (const script of doc.querySelectorAll("script.gv-replay-data")) {
    if (script.dataset.gvMounted) continue;
    script.dataset.gvMounted = "1";
    const model = new LocalModel(JSON.parse(script.textContent));
    const host = element("div", "gv-host");
    script.after(host);
    mount(host, model);
    if (!steppers.length) activate(host.querySelector(".gv-stepper"), true);
    steppers.push(model);
  }
  return steppers;
}
