// The stepper's keys: which key does what (plain tables, tested under Node), and how a key
// press on the page reaches the right stepper.

// Stepping keys, in every mode: the key -> the action's name (the stepper maps names to moves).
export const STEP_KEYS = {
  PageDown: "next",
  PageUp: "prev",
  ArrowRight: "next",
  ArrowDown: "next",
  ArrowLeft: "prev",
  ArrowUp: "prev",
  Home: "first",
  End: "last",
  o: "over",
  u: "out",
  b: "back",
  c: "follow", // F presents (PRESENT_KEYS)
  " ": "play",
};

// Presentation mode's moves (clickers send PageDown/PageUp, arrows, Space, Enter).
export const PRESENT_MOVES = {
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
};

// The stepping action of a key pressed on `tag` (the event target's tag name, and whether it
// is a checkbox), or null: keys typed into a field stay there, Space on a button clicks it.
export function stepAction(key, tag, checkbox = false) {
  if ((tag === "INPUT" && !checkbox) || tag === "SELECT" || tag === "TEXTAREA") return null;
  const action = Object.hasOwn(STEP_KEYS, key) ? STEP_KEYS[key] : null;
  if (!action || (key === " " && tag === "BUTTON")) return null;
  return action;
}

// The presentation key's action: "toggle" (F, in every mode), else only while presenting:
// "bigger"/"smaller" text, "blank", "escape", or a move of PRESENT_MOVES; null: not one.
export function presentAction(key, presenting) {
  if (key === "f" || key === "F") return "toggle";
  if (!presenting) return null;
  if (key === "+" || key === "=") return "bigger";
  if (key === "-") return "smaller";
  if (key === "b" || key === "B" || key === ".") return "blank";
  if (key === "Escape") return "escape";
  return Object.hasOwn(PRESENT_MOVES, key) ? PRESENT_MOVES[key] : null;
}

// Keys reach a stepper without a click first: the document routes them to the stepper that
// has the focus, else the one under the pointer, else the page's stepper (focused on load).
// Buttons that become disabled (First, Last) drop the focus; the keys keep working.
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
  root.addEventListener("pointerenter", enter);
  root.addEventListener("pointerleave", leave);
  root.addEventListener("focusin", take);
  root.addEventListener("pointerdown", take);
  if (keyHandlers.size === 1) document.addEventListener("keydown", dispatchKey);
  return () => {
    keyHandlers.delete(root);
    if (keyTarget === root) keyTarget = null;
    if (hovered === root) hovered = null;
    if (!keyHandlers.size) document.removeEventListener("keydown", dispatchKey);
  };
}
function dispatchKey(event) {
  if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
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
  if (event.defaultPrevented) event.stopPropagation(); // JupyterLab must not act on it too
}
