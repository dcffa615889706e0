// The key table: `?` shows the stepper's one key map over the page (the widget, the offline
// page and presentation mode alike); `?` or Escape hides it.

import { element } from "./dom.js";
import { KEY_HELP } from "./keys.js";

// Inline styles: the table shows over presentation mode's full-screen stage, in the theme's
// colours, whatever the page's own stylesheet says.
const STYLE = [
  "position: fixed",
  "left: 50%",
  "top: 50%",
  "transform: translate(-50%, -50%)",
  "z-index: 2147483002",
  "max-height: 90vh",
  "overflow: auto",
  "background: var(--gv-bg, #fff)",
  "color: var(--gv-fg, #1a1a1a)",
  "border: 2px solid var(--gv-accent, #1f4e99)",
  "border-radius: 6px",
  "padding: 10px 14px",
  "font-size: 15px",
  "box-shadow: 0 4px 24px rgba(0, 0, 0, 0.35)",
].join(";");

export class KeyHelp {
  constructor(root) {
    this.root = root;
    this.el = element("div", "gv-keyhelp");
    this.el.hidden = true;
    this.el.setAttribute("role", "dialog");
    this.el.setAttribute("aria-label", "The stepper's keys");
    this.el.style.cssText = STYLE;
    const table = element("table", "gv-keyhelp-table");
    table.append(element("caption", "", "Keys (? or Escape closes this)"));
    for (const [keys, what] of KEY_HELP) {
      const row = element("tr", "");
      const cell = element("th", "");
      cell.style.cssText = "text-align: left; padding: 2px 14px 2px 0; white-space: nowrap";
      for (const part of keys.split(" ")) {
        cell.append(part === "/" ? document.createTextNode(" / ") : element("kbd", "", part), " ");
      }
      row.append(cell, element("td", "", what));
      table.append(row);
    }
    this.el.append(table);
    root.append(this.el);
  }

  shown() {
    return !this.el.hidden;
  }

  toggle() {
    this.el.hidden = !this.el.hidden;
    this.root.dataset.keyhelp = this.el.hidden ? "off" : "on";
  }

  // Escape closes the table (before it would leave presentation mode); true when used.
  key(event) {
    if (!this.shown() || event.key !== "Escape") return false;
    event.preventDefault();
    this.toggle();
    return true;
  }
}
