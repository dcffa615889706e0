// gradviz film strip: a training run's gradient norms per module over the training steps.
// Reads the run from the page's JSON, draws one log-scale sparkline per module and the
// loss, marks the first non-finite step and each module's vanishing / exploding onset, and
// keeps a slider over the training steps whose position shows the values at that step.
(function () {
  "use strict";
  const root = document.querySelector(".gv-strip");
  const data = JSON.parse(document.querySelector(".gv-strip-data").textContent);
  const SVG = "http://www.w3.org/2000/svg";
  const W = 600, H = 44, PAD = 3;
  const steps = data.steps;
  const n = steps.length;

  function num(v) {
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
  function el(name, attrs, parent) {
    const node = document.createElementNS(SVG, name);
    for (const k in attrs) node.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(node);
    return node;
  }
  function x(i) { return n <= 1 ? W / 2 : PAD + (i * (W - 2 * PAD)) / (n - 1); }

  // One sparkline: values (numbers, NaN, Inf, null), log10 when `log`.
  function spark(values, log, cls, marks) {
    const svg = el("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}` });
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
    for (const [step, kind] of marks) {
      const i = steps.indexOf(step);
      if (i < 0) continue;
      const line = el("line", { x1: x(i), x2: x(i), y1: 0, y2: H, class: `gv-mark gv-mark-${kind}` }, svg);
      line.dataset.step = String(step);
      el("title", {}, line).textContent = `${kind} at step ${step}`;
    }
    const cursor = el("line", { x1: 0, x2: 0, y1: 0, y2: H, class: "gv-cursor" }, svg);
    return { svg, cursor };
  }

  const slider = document.createElement("input");
  slider.type = "range";
  slider.className = "gv-slider";
  slider.min = "0";
  slider.max = String(Math.max(n - 1, 0));
  slider.step = "1";
  slider.value = "0";
  slider.setAttribute("aria-label", "training step");
  const readout = document.createElement("span");
  readout.className = "gv-readout";

  const legend = document.createElement("div");
  legend.className = "gv-legend";
  const nf = data.nonfinite;
  const parts = [`${n} training steps kept`, "gradient norms per module and loss, log scale",
    "marks: dashed = first non-finite, purple = vanishing onset, orange = exploding onset"];
  if (nf) parts.push(`first non-finite: step ${nf.step}` + (nf.modules.length ? ` (${nf.modules.join(", ") || "top module"})` : " (loss)"));
  if (data.recorded.length) parts.push(`recorded in full: steps ${data.recorded.join(", ")}`);
  for (const p of parts) { const s = document.createElement("span"); s.textContent = p; legend.appendChild(s); }
  root.appendChild(legend);

  const table = document.createElement("table");
  root.appendChild(table);
  // the slider sits in the sparklines' column, so its track spans the same steps
  const head = document.createElement("tr");
  head.className = "gv-controls";
  const headLabel = document.createElement("td");
  headLabel.textContent = "training step";
  const headSlider = document.createElement("td");
  slider.style.width = `${W}px`;
  slider.style.margin = "0";
  headSlider.appendChild(slider);
  const headReadout = document.createElement("td");
  headReadout.appendChild(readout);
  head.append(headLabel, headSlider, headReadout);
  table.appendChild(head);
  const rows = [];
  function addRow(name, values, log, cls, marks) {
    const tr = document.createElement("tr");
    tr.className = "gv-row";
    tr.dataset.name = name;
    const label = document.createElement("td");
    label.className = "gv-name";
    label.textContent = name;
    label.title = name;
    const cell = document.createElement("td");
    const { svg, cursor } = spark(values, log, cls, marks);
    const known = values.filter((v) => v !== null && Number.isFinite(v) && (!log || v > 0));
    if (known.length) {
      el("title", {}, svg).textContent =
        `${name}: ${fmt(Math.min(...known))} to ${fmt(Math.max(...known))}`;
    }
    cell.appendChild(svg);
    const value = document.createElement("td");
    value.className = "gv-value";
    tr.append(label, cell, value);
    table.appendChild(tr);
    rows.push({ values, cursor, value });
  }
  const lossMarks = nf ? [[nf.step, "nonfinite"]] : [];
  // the loss on a log scale too when every known value is positive (a divergence shows)
  const losses = data.loss.map(num);
  const positive = losses.every((v) => v === null || !Number.isFinite(v) || v > 0);
  addRow("loss", losses, positive, "gv-loss", lossMarks);
  for (const m of data.modules) {
    const marks = [];
    if (nf) marks.push([nf.step, "nonfinite"]);
    if (m.name in data.vanishing) marks.push([data.vanishing[m.name], "vanishing"]);
    if (m.name in data.exploding) marks.push([data.exploding[m.name], "exploding"]);
    addRow(m.name, m.norms.map(num), true, "", marks);
  }
  if (data.notes.length) {
    const notes = document.createElement("p");
    notes.className = "gv-notes";
    notes.textContent = data.notes.join("; ");
    root.appendChild(notes);
  }

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
  }
  slider.addEventListener("input", () => show(Number(slider.value)));
  show(0);
})();
