// What the overlays share: number formats, a panel row, a toggle button, a key.

import { button, element } from "../dom.js";

export function formatBytes(count) {
  let value = count;
  for (const unit of ["B", "KiB", "MiB", "GiB"]) {
    if (value < 1024 || unit === "GiB") return unit === "B" ? `${count} B` : `${value.toFixed(1)} ${unit}`;
    value /= 1024;
  }
  return `${count} B`;
}

export function formatNorm(norm) {
  return norm === null || norm === undefined ? "n/a" : Number(norm).toPrecision(4);
}

export function infoRow(key, value, bytes) {
  const r = element("div", "gv-row");
  const v = element("span", "gv-value", value);
  if (bytes !== undefined) v.dataset.bytes = String(bytes);
  r.append(element("span", "gv-key", key), v);
  return r;
}

export function toggleButton(label, title, onClick) {
  const b = button(label, title, onClick);
  b.classList.add("gv-toggle");
  b.setAttribute("aria-pressed", "false");
  return b;
}

export function useKey(event, wanted, action) {
  if (event.key !== wanted) return false;
  event.preventDefault();
  action();
  return true;
}

// The step each node ran at (null: it did not), by node id.
export function ranAt(ctx, node) {
  const ran = ctx.data.schedule.nodes[`${ctx.prefix}_${node}`];
  return ran === undefined ? null : ran;
}
