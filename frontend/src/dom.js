// Small DOM helpers shared by the stepper's modules, and the SVG parser that keeps a replay's
// drawings inert: every string from the recording reaches the page as text (textContent),
// never as markup, and the SVGs are parsed as XML and stripped of anything active.

// Parse an SVG as XML (scripts never run) and drop anything that could act.
export function parseSvg(text) {
  const doc = new DOMParser().parseFromString(text, "image/svg+xml");
  const svg = doc.documentElement;
  if (!svg || svg.nodeName !== "svg") throw new Error("gradviz: the replay's SVG did not parse");
  sanitize(svg);
  return document.adoptNode(svg); // moved, not copied
}

// Remove what could act from a parsed SVG (elements that run or embed, on* handlers,
// javascript: links).
export function sanitize(svg) {
  for (const bad of svg.querySelectorAll("script, foreignObject, iframe")) bad.remove();
  for (const node of svg.querySelectorAll("*")) {
    for (const attr of node.getAttributeNames()) {
      const name = attr.toLowerCase(); // the value is read only where it could matter
      if (name.startsWith("on")) node.removeAttribute(attr);
      else if (name.endsWith("href") && node.getAttribute(attr).trim().toLowerCase().startsWith("javascript:")) {
        node.removeAttribute(attr);
      }
    }
  }
}

export function button(label, title, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "gv-btn";
  b.textContent = label;
  b.title = title;
  b.setAttribute("aria-label", title);
  b.addEventListener("click", onClick);
  return b;
}

export function element(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

// The notebook front end's own mark of its theme, "dark", "light", or null where the page
// has none: JupyterLab's body[data-jp-theme-light], VS Code's body classes (a high-contrast
// light theme has "vscode-high-contrast" too), marimo's body[data-theme], Colab's html[theme].
export function frontEndTheme(doc = document) {
  const body = doc.body;
  const html = doc.documentElement;
  if (body) {
    const jupyterlab = body.getAttribute("data-jp-theme-light");
    if (jupyterlab !== null) return jupyterlab === "false" ? "dark" : "light";
    const classes = body.classList;
    if (classes.contains("vscode-light") || classes.contains("vscode-high-contrast-light")) return "light";
    if (classes.contains("vscode-dark") || classes.contains("vscode-high-contrast")) return "dark";
    const marimo = body.getAttribute("data-theme");
    if (marimo === "dark" || marimo === "light") return marimo;
  }
  const colab = html ? html.getAttribute("theme") : null;
  return colab === "dark" || colab === "light" ? colab : null;
}

export function pageIsDark() {
  const marked = frontEndTheme();
  if (marked !== null) return marked === "dark";
  return !!(window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches);
}

// The marks frontEndTheme reads, on <body> and on <html>: a change to one re-reads the theme.
const BODY_MARKS = ["data-jp-theme-light", "class", "data-theme"];
const HTML_MARKS = ["theme"];

// The stepper's dark class follows the front end's theme (frontEndTheme), switched while it
// shows, or else the system's preference; returns a function that stops following.
export function followTheme(root) {
  const applyTheme = () => root.classList.toggle("gv-dark", pageIsDark());
  applyTheme();
  const stops = [];
  const scheme = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  if (scheme && scheme.addEventListener) {
    scheme.addEventListener("change", applyTheme);
    stops.push(() => scheme.removeEventListener("change", applyTheme));
  }
  if (document.body && window.MutationObserver) {
    const observer = new MutationObserver(applyTheme);
    observer.observe(document.body, { attributes: true, attributeFilter: BODY_MARKS });
    observer.observe(document.documentElement, { attributes: true, attributeFilter: HTML_MARKS });
    stops.push(() => observer.disconnect());
  }
  return () => {
    for (const stop of stops) stop();
  };
}
