// From the picture to the code: the panel's row for the source line that made the node
// (data from gradviz.replay.sources): where it is, the line's text, and a link that opens
// the file in VS Code where it is a real file. Every string goes in as text.

import { element } from "./dom.js";

const EDITOR_LINK = "vscode://file/"; // the only links the panel makes

// The source line that made the node of step `index` (a forward frame: index < 0, frames
// counted from `start`), or null: data.sources holds each line once.
export function sourceOf(data, index, start) {
  const sources = data.sources;
  if (!sources) return null;
  const at = index < 0 ? (sources.forward || [])[index - start] : (sources.steps || [])[index];
  return at === null || at === undefined ? null : (sources.lines || [])[at] || null;
}

// The "source" row: "model.py:12" (a link to the editor when the data has one; a cell names
// itself) and, with `withText`, the line itself.
export function sourceRow(source, withText = true) {
  const row = element("div", "gv-row gv-source");
  row.append(element("span", "gv-key", "source"));
  const value = element("span", "gv-value");
  const where = String(source.where || `${source.file || ""}:${source.line || ""}`);
  const href = typeof source.href === "string" && source.href.startsWith(EDITOR_LINK) ? source.href : null;
  if (href) {
    const link = element("a", "gv-source-link", where);
    link.href = href;
    link.title = `Open ${String(source.file || "")} at line ${String(source.line || "")} in VS Code`;
    value.append(link);
  } else value.append(element("span", "gv-source-where", where));
  if (withText && source.text) value.append(element("code", "gv-source-line", String(source.text)));
  row.append(value);
  return row;
}
