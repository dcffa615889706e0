// gradviz film strip: a training run's gradient norms per module over the training steps.
// Draws one log-scale sparkline per module and the loss, marks the first non-finite step and
// each module's vanishing / exploding onset, keeps a slider over the training steps, and
// recolours the backward graph (drawn once by Graphviz) by the chosen step's norms. A mark
// or a kept step whose full recording was kept opens that step's replay (`openReplay`).

const SVG = "http://www.w3.org/2000/svg";
const W = 600, H = 44, PAD = 3;

// A JSON number of the run: NaN and Inf travel as strings, a missing value as null.
export function num(v) {
  if (v === null || v === undefined) return null;
  if (v === "NaN") return NaN;
  if (v === "Infinity") return Infinity;
  if (v === "-Infinity") return -Infinity;
  return v;
}

function fmt(v) {
  if (v === null) return "–";
  if (Number.isNaN(v)) return "NaN";
  if (!Number.isFinite(v)) return v > 0 ? "Inf" : "-Inf";
  return v === 0 ? "0" : v.toExponential(3);
}

// The colour class of a norm on the log scale between the two bands (filmlayout.py's
// colour_class computes the same).
export function colourClass(v, low, high, bins) {
  if (v === null) return "gv-c-none";
  if (!Number.isFinite(v)) return "gv-c-bad";
  if (v < low) return "gv-c-low";
  if (v > high) return "gv-c-high";
  const share = (Math.log10(v) - Math.log10(low)) / (Math.log10(high) - Math.log10(low));
  return `gv-c${Math.min(bins - 1, Math.floor(share * bins))}`;
}
const COLOUR = /^gv-c(\d+|-low|-high|-bad|-none)$/;

function el(name, attrs, parent) {
  const node = document.createElementNS(SVG, name);
  for (const k in attrs) node.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(node);
  return node;
}
function html(name, cls, parent, text) {
  const node = document.createElement(name);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

// The drawn elements of the layout that take a colour: [element, kind, index] for nodes and
// tensor boxes (drawn with the id "<graph id>_<graph's own id>"), and edges by key "n3.0"
// (drawn as "<graph id>_e_n3_0").
function paintable(svg, paint) {
  const nodes = [];
  const edges = new Map();
  const graph = svg.querySelector("g.graph");
  const prefix = graph ? `${graph.id}_` : "";
  for (const g of svg.querySelectorAll("g.node")) {
    if (!g.id.startsWith(prefix)) continue;
    const target = paint[g.id.slice(prefix.length)];
    if (target) nodes.push([g, target[0], target[1]]);
  }
  for (const g of svg.querySelectorAll("g.edge.gv_edge")) {
    const match = /_e_(.+)_(\d+)$/.exec(g.id.slice(prefix.length - 1));
    if (match) edges.set(`${match[1]}.${match[2]}`, g);
  }
  return { nodes, edges };
}

function recolour(g, cls) {
  for (const c of [...g.classList]) if (COLOUR.test(c)) g.classList.remove(c);
  if (cls) g.classList.add("gv-painted", cls);
  else g.classList.remove("gv-painted");
  g.dataset.colour = cls || "";
}

// The keys a focused slider moves with never reach the page's own shortcuts (JupyterLab's
// listen on the document and take the arrows): stopped on the window in the capture phase,
// before them; the browser still moves the slider, its default action.
const SLIDER_KEYS = new Set(["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End", "PageUp", "PageDown"]);
let guarding = false;
function guardSliderKeys() {
  if (guarding) return;
  guarding = true;
  window.addEventListener("keydown", (event) => {
    const target = event.target;
    if (SLIDER_KEYS.has(event.key) && target instanceof Element && target.matches(".gv-strip .gv-slider")) {
      event.stopPropagation();
    }
  }, true);
}

export function mountFilmstrip(root, data, { openReplay, onStep, title } = {}) {
  guardSliderKeys();
  const steps = data.steps;
  const n = steps.length;
  const scale = data.scale;
  const replays = data.replays || {};
  const x = (i) => (n <= 1 ? W / 2 : PAD + (i * (W - 2 * PAD)) / (n - 1));
  root.classList.add("gv-strip");
  if (title) html("h1", "", root, title);

  const head = html("div", "gv-head", root);
  const headTable = html("table", "", head);
  const headRow = html("tr", "gv-controls", headTable);
  html("td", "gv-name", headRow, "training step");
  const sliderCell = html("td", "gv-spark", headRow);
  const readoutCell = html("td", "gv-value", headRow);
  const slider = html("input", "gv-slider", sliderCell);
  slider.type = "range";
  slider.min = "0";
  slider.max = String(Math.max(n - 1, 0));
  slider.step = "1";
  slider.value = "0";
  slider.setAttribute("aria-label", "training step");
  slider.style.width = `${W}px`;
  slider.style.margin = "0";
  const readout = html("span", "gv-readout", readoutCell);

  const scaleBar = html("div", "gv-scale", head);
  html("span", "", scaleBar, "colour = gradient norm at this step (log scale): ");
  const swatch = (cls, text) => html("span", `gv-swatch ${cls}`, scaleBar, text);
  const short = (v) => v.toExponential(0).replace("e+", "e");
  swatch("gv-c-low", `< ${short(scale.low)} vanishing`);
  const decades = Math.log10(scale.high) - Math.log10(scale.low);
  for (let k = 0; k < scale.bins; k++) {
    const from = 10 ** (Math.log10(scale.low) + (k * decades) / scale.bins);
    swatch(`gv-c${k}`, `≥${short(from)}`).title = `from ${fmt(from)}`;
  }
  swatch("gv-c-high", `> ${short(scale.high)} exploding`);
  swatch("gv-c-bad", "NaN/Inf");
  swatch("gv-c-none", "no grad");

  const nf = data.nonfinite;
  const legend = html("div", "gv-legend", root);
  const parts = [`${n} training steps kept`, "gradient norms per module and loss, log scale",
    "marks: dashed = first non-finite, purple = vanishing onset, orange = exploding onset"];
  if (nf) parts.push(`first non-finite: step ${nf.step}` + (nf.modules.length ? ` (${nf.modules.join(", ") || "top module"})` : " (loss)"));
  for (const p of parts) html("span", "", legend, p);
  if (data.recorded.length) {
    const kept = html("div", "gv-replays", root);
    html("span", "", kept, "recorded in full (open the replay): ");
    for (const step of data.recorded) {
      const link = html("a", "gv-replay-link", kept, `step ${step}`);
      link.dataset.step = String(step);
      if (replays[String(step)] !== undefined && typeof replays[String(step)] === "string") {
        link.href = replays[String(step)];
      } else link.href = "#";
      link.addEventListener("click", (event) => {
        event.preventDefault();
        open(step);
      });
    }
  }

  // the backward layout, recoloured per step
  const layout = html("div", "gv-layout", root);
  let painted = { nodes: [], edges: new Map() };
  if (data.layout && data.layout.svg) {
    layout.innerHTML = data.layout.svg.replace(/^[\s\S]*?(<svg[\s>])/, "$1");
    const svg = layout.querySelector("svg");
    if (svg) {
      svg.removeAttribute("width");
      svg.removeAttribute("height");
      painted = paintable(svg, data.layout.paint);
    }
  } else {
    html("p", "gv-layout-note", layout, (data.layout && data.layout.note) || "no layout");
  }

  const table = html("table", "", root);
  const rows = [];
  function spark(values, log, cls, marks) {
    const svg = el("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "gv-sparkline" });
    const ys = values.map((v) => (v === null || !Number.isFinite(v) || (log && v <= 0)
      ? null : (log ? Math.log10(v) : v)));
    const known = ys.filter((v) => v !== null);
    const lo = known.length ? Math.min(...known) : 0;
    const hi = known.length ? Math.max(...known) : 1;
    const span = hi - lo || 1;
    const y = (v) => H - PAD - ((v - lo) / span) * (H - 2 * PAD);
    let d = "";
    ys.forEach((v, i) => {
      if (v === null) return;
      d += `${d && ys[i - 1] !== null ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
    });
    el("path", { d, class: `gv-line ${cls}` }, svg);
    values.forEach((v, i) => {
      if (v !== null && !Number.isFinite(v)) el("circle", { cx: x(i), cy: PAD + 2, r: 2.5, class: "gv-bad" }, svg);
    });
    for (const step of data.recorded) {
      const i = steps.indexOf(step);
      if (i >= 0) el("rect", { x: x(i) - 2, y: H - 4, width: 4, height: 4, class: "gv-kept" }, svg);
    }
    for (const [step, kind] of marks) {
      const i = steps.indexOf(step);
      if (i < 0) continue;
      const line = el("line", { x1: x(i), x2: x(i), y1: 0, y2: H, class: `gv-mark gv-mark-${kind}` }, svg);
      line.dataset.step = String(step);
      const hit = el("line", { x1: x(i), x2: x(i), y1: 0, y2: H, class: `gv-mark-hit gv-hit-${kind}` }, svg);
      hit.dataset.step = String(step);
      if (String(step) in replays) hit.classList.add("gv-has-replay");
      const opens = String(step) in replays ? "click: open its replay" : "click: go to it";
      el("title", {}, hit).textContent = `${kind} at step ${step} (${opens})`;
      hit.addEventListener("click", (event) => {
        event.stopPropagation();
        open(step);
      });
    }
    const cursor = el("line", { x1: 0, x2: 0, y1: 0, y2: H, class: "gv-cursor" }, svg);
    // a click elsewhere on a sparkline chooses the nearest step
    svg.addEventListener("click", (event) => {
      const box = svg.getBoundingClientRect();
      const at = ((event.clientX - box.left) / box.width) * W;
      const i = n <= 1 ? 0 : Math.round(((at - PAD) * (n - 1)) / (W - 2 * PAD));
      choose(Math.max(0, Math.min(n - 1, i)));
    });
    return { svg, cursor };
  }
  function addRow(name, values, log, cls, marks) {
    const tr = html("tr", "gv-row", table);
    tr.dataset.name = name;
    const label = html("td", "gv-name", tr, name);
    label.title = name;
    const cell = html("td", "gv-spark", tr);
    const { svg, cursor } = spark(values, log, cls, marks);
    const known = values.filter((v) => v !== null && Number.isFinite(v) && (!log || v > 0));
    if (known.length) {
      el("title", {}, svg).textContent = `${name}: ${fmt(Math.min(...known))} to ${fmt(Math.max(...known))}`;
    }
    cell.appendChild(svg);
    const value = html("td", "gv-value", tr);
    rows.push({ values, cursor, value });
  }
  const losses = data.loss.map(num);
  // the loss on a log scale too when every known value is positive (a divergence shows)
  const positive = losses.every((v) => v === null || !Number.isFinite(v) || v > 0);
  addRow("loss", losses, positive, "gv-loss", nf ? [[nf.step, "nonfinite"]] : []);
  const moduleNorms = data.modules.map((m) => m.norms.map(num));
  data.modules.forEach((m, j) => {
    const marks = [];
    if (nf) marks.push([nf.step, "nonfinite"]);
    if (m.name in data.vanishing) marks.push([data.vanishing[m.name], "vanishing"]);
    if (m.name in data.exploding) marks.push([data.exploding[m.name], "exploding"]);
    addRow(m.name, moduleNorms[j], true, "", marks);
  });
  const paramNorms = data.params.map((p) => p.norms.map(num));
  if (data.notes.length) html("p", "gv-notes", root, data.notes.join("; "));

  function show(i) {
    root.dataset.index = String(i);
    root.dataset.step = n ? String(steps[i]) : "";
    const lr = n ? data.lr[i] : null;
    readout.textContent = n ? `step ${steps[i]}  lr ${fmt(num(lr))}` : "no steps kept";
    for (const row of rows) {
      row.cursor.setAttribute("x1", x(i));
      row.cursor.setAttribute("x2", x(i));
      row.value.textContent = n ? fmt(row.values[i]) : "–";
    }
    for (const [g, kind, index] of painted.nodes) {
      const v = n ? (kind === "p" ? paramNorms : moduleNorms)[index][i] : null;
      recolour(g, colourClass(v, scale.low, scale.high, scale.bins));
      g.dataset.norm = v === null ? "" : String(v);
    }
    const sent = n ? data.edges[String(steps[i])] : undefined;
    for (const [key, g] of painted.edges) {
      const v = sent && key in sent ? num(sent[key]) : undefined;
      recolour(g, v === undefined ? null : colourClass(v, scale.low, scale.high, scale.bins));
    }
    if (onStep && n) onStep(steps[i]);
  }
  function choose(i) {
    slider.value = String(i);
    show(i);
  }
  function open(step) {
    const i = steps.indexOf(step);
    if (i >= 0) choose(i);
    if (String(step) in replays && openReplay) openReplay(step, replays[String(step)]);
  }
  slider.addEventListener("input", () => show(Number(slider.value)));
  show(0);
  return { choose, open };
}
