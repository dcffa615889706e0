// The stepper's keys: one key map, the same in the notebook widget, on the offline page and in
// presentation mode (plain tables, tested under Node), and how a key press on the page
// reaches the right stepper and no one else (JupyterLab's own shortcuts included).

// Stepping keys: the key -> the action's name (the stepper maps names to moves). Clickers
// send PageDown/PageUp, arrows, Space or Enter.
export const STEP_KEYS = {
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
  o: "over",
  u: "out",
  b: "back",
  c: "follow",
  p: "play",
  "?": "help",
};

// Presentation and text keys: F presents in every mode, the caption's text size too; blank
// and Escape act only while presenting (Escape also closes the key table, see keyhelp.js).
export const PRESENT_KEYS = {
  f: "toggle",
  F: "toggle",
  "+": "bigger",
  "=": "bigger",
  "-": "smaller",
  ".": "blank",
  Escape: "escape",
};
const ONLY_PRESENTING = new Set(["blank", "escape"]);

// Run-to keys (breakpoints, see runto.js): the key -> the breakpoint it runs to.
export const RUN_KEYS = {
  n: "nonfinite",
  ">": "above",
  "<": "below",
  i: "module",
  t: "type",
};

// The key table `?` shows (and docs/keys.md): [keys, what they do].
export const KEY_HELP = [
  ["→ ↓ PageDown Space Enter", "next step"],
  ["← ↑ PageUp Backspace", "previous step"],
  ["Home / End", "first / last step"],
  ["o", "step over: past the module the active node runs in"],
  ["u", "step out: past the module around it"],
  ["b", "back: to where the previous module started"],
  ["c", "follow the active node again"],
  ["p", "play / pause"],
  ["f", "enter / leave presentation mode"],
  ["+ = / -", "larger / smaller caption text"],
  [".", "blank the screen (again: show it), presentation mode"],
  ["Escape", "close this table; show a blanked screen; leave presentation mode"],
  ["m / h", "the Memory / Health toggles, where shown"],
  ["d / s", "first differing step (diff pages) / the optimizer step (optimizer pages)"],
  ["n", "run to the next NaN or Inf gradient"],
  ["> / <", "run to the next gradient norm above / below the Run to threshold"],
  ["i", "run to the next step in the chosen module (else the active node's)"],
  ["t", "run to the next node of the chosen type (else the active node's)"],
  ["?", "show / hide this table"],
];

// The stepping action of a key pressed on `tag` (the event target's tag name, and whether it
// is a checkbox), or null: keys typed into a field stay there, Space and Enter on a button
// click it.
export function stepAction(key, tag, checkbox = false) {
  if ((tag === "INPUT" && !checkbox) || tag === "SELECT" || tag === "TEXTAREA") return null;
  const action = Object.hasOwn(STEP_KEYS, key) ? STEP_KEYS[key] : null;
  if (!action || ((key === " " || key === "Enter") && tag === "BUTTON")) return null;
  if (key === " " && checkbox) return null;
  return action;
}

// The presentation key's action ("toggle", "bigger", "smaller", "blank", "escape"), or null.
export function presentAction(key, presenting) {
  const action = Object.hasOwn(PRESENT_KEYS, key) ? PRESENT_KEYS[key] : null;
  if (action === null || (ONLY_PRESENTING.has(action) && !presenting)) return null;
  return action;
}

// The breakpoint a run-to key runs to, or null.
export function runAction(key) {
  return Object.hasOwn(RUN_KEYS, key) ? RUN_KEYS[key] : null;
}

// Whether the key belongs to the key map (whatever it does in the present mode).
export function isMapped(event) {
  if (event.ctrlKey || event.metaKey || event.altKey) return false;
  if (event.shiftKey && event.key === "Enter") return false; // the notebook's run-cell
  const key = event.key;
  if (Object.hasOwn(RUN_KEYS, key)) return true;
  return Object.hasOwn(STEP_KEYS, key) || Object.hasOwn(PRESENT_KEYS, key) || /^[mhds]$/.test(key);
}

// Keys reach a stepper without a click first: the stepper that has the focus, else the one
// under the pointer, else the page's stepper (focused on load). Buttons that become disabled
// (First, Last) drop the focus; the keys keep working.
// The page's own shortcuts never see a key the stepper used: the router listens on the
// window in the capture phase, before any of them (JupyterLab's listen on the document), and
// stops the key there. A key of the map pressed inside a stepper but left to the browser
// (typed into its search box, Space on a button) is stopped when it bubbles out of the
// stepper, so JupyterLab does not run a cell, insert one or collapse a heading with it.
let keyTarget = null; // the stepper the keys go to when focus is nowhere in particular
let hovered = null;
const keyHandlers = new Map();
export function activate(root, focus = false) {
  keyTarget = root;
  if (focus && root) root.focus({ preventScroll: true });
}
export function routeKeys(root, handler) {
  keyHandlers.set(root, handler);
  const enter = () => (hovered = root);
  const leave = () => hovered === root && (hovered = null);
  const take = () => activate(root);
  const keep = (event) => isMapped(event) && event.stopPropagation();
  root.addEventListener("pointerenter", enter);
  root.addEventListener("pointerleave", leave);
  root.addEventListener("focusin", take);
  root.addEventListener("pointerdown", take);
  root.addEventListener("keydown", keep);
  if (keyHandlers.size === 1) {
    window.addEventListener("keydown", dispatchKey, true);
    document.addEventListener("pointerdown", dropFocus, true);
  }
  return () => {
    keyHandlers.delete(root);
    root.removeEventListener("keydown", keep);
    if (keyTarget === root) keyTarget = null;
    if (hovered === root) hovered = null;
    if (!keyHandlers.size) {
      window.removeEventListener("keydown", dispatchKey, true);
      document.removeEventListener("pointerdown", dropFocus, true);
    }
  };
}
// A click outside a stepper that has the focus takes the focus away from it, so that the page
// can give it to what was clicked: JupyterLab, for one, leaves the focus where it is when it
// is already inside the notebook (a stepper is, in its output), and the keys would keep
// stepping after a click on another cell.
function dropFocus(event) {
  const focused = document.activeElement;
  for (const root of keyHandlers.keys()) {
    if (focused && root.contains(focused) && !root.contains(event.target)) focused.blur();
  }
}
function dispatchKey(event) {
  if (event.defaultPrevented || !isMapped(event)) return;
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
  if (event.defaultPrevented) event.stopImmediatePropagation(); // used: no one else acts on it
}
