// Download the step shown as SVG: its classes and the stylesheet inlined.

import { element } from "./dom.js";

// The shown view's SVG as text, at its natural size, with `css` inlined.
export function stepSvgText(view, css, labelsShown) {
  // a lazy view (lazy/lazysvg.js) writes its unparsed nodes and edges from their text
  const lazy = view.virtual && view.virtual.snapshot ? view.virtual.snapshot() : null;
  if (view.virtual && !lazy) view.virtual.all();
  const clone = lazy ? lazy.clone : view.svg.cloneNode(true);
  if (view.virtual && !lazy) view.virtual.restore();
  clone.style.removeProperty("transform");
  const [w, h] = view.size;
  if (w) clone.setAttribute("width", w);
  if (h) clone.setAttribute("height", h);
  const b = view.home;
  clone.setAttribute("viewBox", `${b.x} ${b.y} ${b.w} ${b.h}`);
  const sheet = document.createElementNS("http://www.w3.org/2000/svg", "style");
  sheet.textContent = String(css.plain || "") + (labelsShown ? "" : ".gv_grad{display:none}");
  clone.insertBefore(sheet, clone.firstChild);
  const text = new XMLSerializer().serializeToString(clone);
  return lazy ? lazy.text(text) : text;
}
export function downloadSvg(root, text, index, start) {
  const blob = new Blob([text], { type: "image/svg+xml" });
  const url = URL.createObjectURL(blob);
  const a = element("a");
  a.href = url;
  const number = (n) => String(n).padStart(3, "0");
  const name = index < 0 ? `forward-${number(index - start + 1)}` : `step-${number(index)}`;
  a.download = `gradviz-${name}.svg`;
  root.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
