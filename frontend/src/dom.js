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

export function pageIsDark() {
  const body = document.body;
  const light = body ? body.getAttribute("data-jp-theme-light") : null;
  if (light !== null) return light === "false";
  return !!(window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches);
}

// The stepper's dark class follows JupyterLab's theme (body[data-jp-theme-light]) or the
// system's preference; returns a function that stops following.
export function followTheme(root) {
  const applyTheme = () => root.classList.toggle("gv-dark", pageIsDark());
  applyTheme();
  if (!document.body || !window.MutationObserver) return () => {};
  const observer = new MutationObserver(applyTheme);
  observer.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-light"] });
  return () => observer.disconnect();
}
