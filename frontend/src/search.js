// The search box: finds a node by its type, module or tensor names; Enter goes to the next
// match. The stepper highlights the matches and jumps to them.

import { element } from "./dom.js";

const MAX_MATCHES = 400; // highlighted search matches at most

// The search box: matches nodes by type, module and tensor names (data.search: [node, text]).
export class Search {
  constructor(items, onFind) {
    this.items = (items || []).map(([node, text]) => [node, String(text).toLowerCase()]);
    this.matches = [];
    this.at = -1;
    this.el = element("span", "gv-search");
    this.input = element("input", "gv-search-input");
    this.input.type = "search";
    this.input.placeholder = "find op, module, tensor";
    this.input.title = "Find a node by its type (MmBackward0), module (blocks.0) or tensor name; Enter: next";
    this.input.setAttribute("aria-label", "Find a node");
    this.count = element("span", "gv-search-count");
    this.el.append(this.input, this.count);
    this.input.addEventListener("input", () => this.run(onFind));
    this.input.addEventListener("keydown", (event) => {
      if (event.key !== "Enter") return;
      event.preventDefault();
      this.next(onFind, event.shiftKey ? -1 : 1);
    });
  }

  run(onFind) {
    const query = this.input.value.trim().toLowerCase();
    this.matches = query ? this.items.filter(([, text]) => text.includes(query)).map(([n]) => n) : [];
    this.at = -1;
    this.next(onFind, 1);
  }

  next(onFind, direction) {
    const n = this.matches.length;
    if (n) this.at = (this.at + direction + n) % n;
    this.count.textContent = this.input.value.trim() ? (n ? `${this.at + 1} / ${n}` : "no match") : "";
    onFind(this.matches, n ? this.matches[this.at] : null);
  }
}

// The matches highlighted in the shown view (the first MAX_MATCHES), the chosen one marked.
export class Highlight {
  constructor() {
    this.marked = [];
  }

  clear() {
    for (const e of this.marked) e.classList.remove("gv-match", "gv-match-current");
    this.marked = [];
  }

  // Returns the chosen match's element (`at`; null: none chosen), or null.
  show(view, prefix, matches, at, elementOf) {
    this.clear();
    const shown = matches.slice(0, MAX_MATCHES);
    if (view.byId.want) view.byId.want(shown.map((node) => `${prefix}_${node}`)); // a lazy view: one parse for all
    for (const node of shown) {
      const e = elementOf(node);
      if (e) {
        e.classList.add("gv-match");
        this.marked.push(e);
      }
    }
    if (at === null) return null;
    const e = elementOf(at);
    if (e) e.classList.add("gv-match-current");
    return e;
  }
}
