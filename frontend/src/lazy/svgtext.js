// Reading a big view's SVG as text, without parsing it: tags, attributes, entities (the
// lazy view of lazysvg.js).
//
// Parsing a 3,000-node view's SVG (3.8 MB, 38,000 elements) took 430 ms of the page's start,
// and reading every node's geometry from the DOM 250 ms more, for a first frame that shows a
// few dozen nodes. Above VIRTUAL_ABOVE nodes and edges, one pass over the text splits it into
// a shell (the root, the graph group, the clusters: parsed at once) and the nodes and edges,
// each with its id, box, DOT name and fill read from the text; a node or edge is parsed (and
// sanitized, as parseSvg does) the first time the camera comes near it or something asks for
// it by id. Text with comments, CDATA, a DTD or processing instructions is parsed whole.

import { REPLAY_CLASSES } from "../schedule.js";

export const TAG = /<(\/?)([A-Za-z_][\w:.-]*)((?:\s+[^\s=/>]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>/g;
const ATTR = /([^\s=]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;
const ENTITY = /&(#x[0-9a-fA-F]+|#\d+|lt|gt|amp|quot|apos);/g;
const NAMED = { lt: "<", gt: ">", amp: "&", quot: '"', apos: "'" };
// An empty comment: a node's place until it is parsed. Joined at run time: the page's inline
// <script> must not hold the characters that open an HTML comment (the minifier folds a literal).
export const HOLDER = ["<", "!---->"].join("");

export function unescapeXml(text) {
  if (!text.includes("&")) return text;
  return text.replace(ENTITY, (_, e) =>
    e[0] === "#" ? String.fromCodePoint(e[1] === "x" ? parseInt(e.slice(2), 16) : Number(e.slice(1))) : NAMED[e],
  );
}

// One attribute of a tag's attribute text: the quick look for ` name="` first (how Graphviz
// writes them), then a full read.
export function attrOf(text, name) {
  const at = text.indexOf(` ${name}="`);
  if (at < 0) return attrsOf(text)[name];
  const from = at + name.length + 3;
  return unescapeXml(text.slice(from, text.indexOf('"', from)));
}

export function attrsOf(text) {
  const out = {};
  for (const m of text.matchAll(ATTR)) out[m[1]] = unescapeXml(m[2] !== undefined ? m[2] : m[3]);
  return out;
}
// What could act in an unparsed node or edge's text (an element that runs or embeds, an on*
// attribute, a link): a download parses and sanitizes such an item first. Over-wide on purpose
// (" on=" in a label matches too): a false match costs one parse, a miss would not be safe.
export const UNSAFE = /<[^\s>]*(?:script|foreignobject|iframe)|\s(?:[\w.-]*:)?on[\w.-]*\s*=|href/i;
const CLASS_ATTR = /\sclass\s*=\s*(?:"[^"]*"|'[^']*')/;

// An unparsed item's text with the classes of the step shown (as View.setClass gives them).
export function classedText(text, current) {
  return text.replace(new RegExp(TAG.source, "g"), (whole, close, name, attrs, self) => {
    if (close || !attrs.includes("id")) return whole;
    const id = attrsOf(attrs).id;
    if (!id) return whole;
    const kept = (attrsOf(attrs).class || "").split(/\s+/).filter((c) => c && !REPLAY_CLASSES.includes(c));
    for (const c of (current.get(id) || "").split(" ")) if (c && !kept.includes(c)) kept.push(c);
    const value = kept.join(" ").replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;");
    const rest = attrs.replace(CLASS_ATTR, "");
    const cls = value ? ' class="' + value + '"' : ""; // no nested template: the minifier joins its space
    return "<" + name + rest + cls + (self ? "/" : "") + ">";
  });
}
