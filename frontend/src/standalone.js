// The standalone page: its replays' data, unpacked, each mounted on a local model.

import { element } from "./dom.js";
import { activate } from "./keys.js";
import { mount } from "./mount.js";

// A model with anywidget's surface for the standalone page: local state, no kernel.
export class LocalModel {
  constructor(state) {
    this.state = { ...state };
    this.handlers = new Map();
  }
  get(key) {
    return this.state[key];
  }
  set(key, value) {
    if (this.state[key] === value) return;
    this.state[key] = value;
    for (const fn of this.handlers.get(`change:${key}`) || []) fn();
  }
  save_changes() {}
  send() {} // the page ships every view it offers: nothing to ask for
  on(event, fn) {
    if (!this.handlers.has(event)) this.handlers.set(event, new Set());
    this.handlers.get(event).add(fn);
  }
  off(event, fn) {
    const set = this.handlers.get(event);
    if (set) set.delete(fn);
  }
}

// The standalone page: each data script (class gv-replay-data) holds one replay (JSON, or for big
// replays gzip, 7 bits a character, that DecompressionStream inflates); mount it right after the script.
// `features` as mount takes them. Returns a promise of the mounted models.
export async function mountStandalone(doc = document, features = {}) {
  const steppers = [];
  for (const script of doc.querySelectorAll("script.gv-replay-data")) {
    if (script.dataset.gvMounted) continue;
    script.dataset.gvMounted = "1";
    const host = element("div", "gv-host");
    script.after(host);
    const text = script.dataset.encoding === "gzip+7bit" ? await inflate(script.textContent) : script.textContent;
    const model = new LocalModel(expandBorn(JSON.parse(text)));
    if (performance.mark) performance.mark("gv-data");
    mount(host, model, features);
    if (performance.mark) performance.mark("gv-mounted");
    if (!steppers.length) activate(host.querySelector(".gv-stepper"), true);
    steppers.push(model);
  }
  return steppers;
}

// The page says when each element appears once for all views (born["*"], gradviz/stepper/page.py
// _shared_born): each view gets the shared frames of the elements its SVG has, then its own.
export function expandBorn(state) {
  const schedule = state.data && state.data.schedule;
  const born = schedule && schedule.born;
  if (!born || !born["*"]) return state;
  const out = {};
  for (const [view, own] of Object.entries(born)) {
    if (view === "*") continue;
    const mine = {};
    for (const match of (state.svgs[view] || "").matchAll(/ id="([^"]+)"/g)) {
      if (Object.hasOwn(born["*"], match[1])) mine[match[1]] = born["*"][match[1]];
    }
    out[view] = { ...mine, ...own };
  }
  schedule.born = out;
  return state;
}

// gzip, 7 bits a character -> text, with the browser's own decompressor (no library, no eval).
export async function inflate(packed) {
  const stream = new Blob([sevenBitBytes(packed)]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).text();
}

// The page's packed data (gradviz/stepper/sevenbit.py): each character carries 7 bits, its code
// below 128, or U+0100 plus the value for NUL, CR and "<" (which the HTML parser would change).
export function sevenBitBytes(text) {
  const bytes = new Uint8Array(Math.floor((text.length * 7) / 8));
  let bits = 0;
  let held = 0;
  let o = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    held = ((held << 7) | (code < 128 ? code : code - 256)) & 0x7fff;
    bits += 7;
    if (bits >= 8) {
      bits -= 8;
      if (o < bytes.length) bytes[o++] = (held >> bits) & 255;
    }
  }
  return bytes;
}
