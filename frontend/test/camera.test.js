// The camera's arithmetic: placing a box in the canvas, following the active node, zooming.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  MAX_SCALE,
  boxAround,
  canvasToGraph,
  clampInto,
  focusBox,
  frameBox,
  maxScale,
  placement,
  presentTextPx,
  readableScale,
  scaleFor,
  startBox,
  zoomed,
} from "../src/camera.js";

const size = { width: 800, height: 600 };
const close = (a, b) => assert.ok(Math.abs(a - b) < 1e-9, `${a} != ${b}`);

test("a box is placed as preserveAspectRatio meet: scaled to fit, centred", () => {
  const home = { x: 0, y: 0, w: 400, h: 600 };
  const p = placement(home, home, size);
  assert.equal(p.s, 1); // the height fits at 1
  assert.equal(p.tx, 200); // centred across
  assert.equal(p.ty, 0);
  const zoomedIn = placement({ x: 100, y: 100, w: 200, h: 150 }, home, size);
  assert.equal(zoomedIn.s, 4);
  assert.equal(zoomedIn.tx, -400);
  assert.equal(zoomedIn.ty, -400);
});

test("canvasToGraph undoes the placement", () => {
  const home = { x: -10, y: 5, w: 400, h: 600 };
  const box = { x: 30, y: 60, w: 100, h: 75 };
  const view = { home, placed: placement(box, home, size) };
  const [x, y] = canvasToGraph(view, 0, 0);
  close(x, box.x);
  close(y, box.y);
  const [cx, cy] = canvasToGraph(view, 400, 300);
  close(cx, box.x + box.w / 2);
  close(cy, box.y + box.h / 2);
});

test("a box around a point has the canvas's aspect at the scale asked", () => {
  const b = boxAround(100, 50, 2, size);
  assert.deepEqual(b, { x: -100, y: -100, w: 400, h: 300 });
  assert.equal(scaleFor(b, size), 2);
});

test("the camera stays put while the target and its neighbours are on screen, readable", () => {
  const now = { x: 0, y: 0, w: 400, h: 300 }; // scale 2: readable
  assert.equal(focusBox(now, { x: 100, y: 100, w: 50, h: 20 }, [{ x: 200, y: 150, w: 40, h: 20 }], size), null);
});

test("it moves to show the target and its neighbours, never zooming in past MAX_SCALE", () => {
  const now = { x: 0, y: 0, w: 400, h: 300 };
  const target = { x: 1000, y: 1000, w: 50, h: 20 };
  const box = focusBox(now, target, [], size);
  assert.ok(scaleFor(box, size) <= MAX_SCALE + 1e-9);
  assert.ok(box.x <= target.x && box.x + box.w >= target.x + target.w);
  assert.ok(box.y <= target.y && box.y + box.h >= target.y + target.h);
});

test("when the neighbours are too wide to show readable, the target wins", () => {
  const now = { x: 0, y: 0, w: 800, h: 600 }; // scale 1: below readable (12 / 11)
  const target = { x: 5000, y: 100, w: 60, h: 30 };
  const far = { x: 0, y: 100, w: 60, h: 30 };
  const box = focusBox(now, target, [far], size);
  close(scaleFor(box, size), readableScale());
  close(box.x + box.w / 2, target.x + target.w / 2); // centred on the target
});

test("a big view opens readable at its top; a small one whole", () => {
  assert.equal(startBox({ x: 0, y: 0, w: 400, h: 300 }, size), null);
  const home = { x: 0, y: 0, w: 8000, h: 6000 };
  const b = startBox(home, size);
  close(scaleFor(b, size), readableScale() * 1.1);
  assert.equal(b.y, home.y);
  close(b.x + b.w / 2, home.w / 2);
});

test("zooming keeps the point it zooms about in place", () => {
  const box = { x: 0, y: 0, w: 400, h: 300 };
  assert.deepEqual(zoomed(box, 0.5), { x: 100, y: 75, w: 200, h: 150 });
  const about = zoomed(box, 2, 100, 100);
  close((100 - about.x) / about.w, (100 - box.x) / box.w);
  close((100 - about.y) / about.h, (100 - box.y) / box.h);
});

test("presentation text is 20 px on a 1080-line screen, 16 px at 720 and below", () => {
  assert.equal(presentTextPx(1080), 20);
  assert.equal(presentTextPx(1440), 20);
  assert.equal(presentTextPx(720), 16);
  assert.equal(presentTextPx(480), 16);
  close(presentTextPx(918), 17);
});

test("a box is kept inside the graph where it is smaller, centred on it where bigger", () => {
  const home = { x: 0, y: 0, w: 1000, h: 200 };
  assert.deepEqual(clampInto({ x: -50, y: 0, w: 400, h: 300 }, home), { x: 0, y: -50, w: 400, h: 300 });
  assert.deepEqual(clampInto({ x: 900, y: 10, w: 400, h: 100 }, home), { x: 600, y: 10, w: 400, h: 100 });
});

test("following zooms out as far as the neighbours need, never below readable", () => {
  const readable = readableScale(16, 9);
  const now = boxAround(400, 300, maxScale(readable), size); // zoomed in as far as it goes
  const target = { x: 380, y: 290, w: 40, h: 20 };
  const near = [{ x: 380, y: 160, w: 40, h: 20 }, { x: 380, y: 420, w: 40, h: 20 }];
  const box = focusBox(now, target, near, size, readable);
  const scale = scaleFor(box, size);
  assert.ok(scale < maxScale(readable) && scale >= readable - 1e-9, scale);
  for (const b of [target, ...near]) assert.ok(b.y >= box.y && b.y + b.h <= box.y + box.h, b);
});

test("a forward frame is framed on what is drawn so far, centred", () => {
  const region = { x: 100, y: 100, w: 200, h: 100 };
  const box = frameBox(region, [region], size, readableScale());
  close(box.x + box.w / 2, 200);
  close(box.y + box.h / 2, 150);
  assert.ok(box.x <= region.x && box.x + box.w >= region.x + region.w);
  assert.ok(scaleFor(box, size) <= maxScale(readableScale()) + 1e-9);
});

test("a forward frame too big to show readable shows the newest part, inside what is drawn", () => {
  const region = { x: 0, y: 0, w: 5000, h: 5000 };
  const newest = [{ x: 4900, y: 4900, w: 60, h: 30 }];
  const box = frameBox(region, newest, size, readableScale());
  close(scaleFor(box, size), readableScale());
  assert.ok(box.x <= 4900 && box.x + box.w >= 4960 && box.y <= 4900 && box.y + box.h >= 4930);
  assert.ok(box.x + box.w <= 5000 + 24 + 1e-9); // no blank beyond the drawn graph (and its margin)
});
