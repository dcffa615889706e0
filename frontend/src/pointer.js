// The mouse on the graph: Ctrl + wheel zooms about the pointer, a drag pans, a click on a
// collapsed module expands it and a click on a node goes to the step it ran at (or, while
// the quiz asks, answers it: the click itself reaches the node).

import { canvasToGraph } from "./camera.js";

const CLICK_PX = 5; // a pointer that moved less than this between down and up clicked

// `on`: view() the shown view, camera, zoom(factor, x, y, byHand), pan() when a drag starts,
// box(target) the collapsed module under a target (or null), expand(box), node(element).
export function onPointer(canvas, on) {
  const toGraph = (event) => {
    const r = canvas.getBoundingClientRect();
    return canvasToGraph(on.view(), event.clientX - r.left, event.clientY - r.top);
  };
  canvas.addEventListener(
    "wheel",
    (event) => {
      if (!event.ctrlKey && !event.metaKey) return;
      event.preventDefault();
      const [x, y] = toGraph(event);
      on.zoom(event.deltaY > 0 ? 1.15 : 1 / 1.15, x, y, true);
    },
    { passive: false },
  );
  let drag = null;
  canvas.addEventListener("pointerdown", (event) => {
    const view = on.view();
    if (event.button !== 0 || !view) return;
    const node = event.target && event.target.closest ? event.target.closest("g.node") : null;
    drag = { x: event.clientX, y: event.clientY, box: { ...view.box }, hit: on.box(event.target), node };
  });
  canvas.addEventListener("pointermove", (event) => {
    if (!drag) return;
    const moved = Math.abs(event.clientX - drag.x) + Math.abs(event.clientY - drag.y);
    if (moved < CLICK_PX && !drag.panning) return;
    if (!drag.panning) {
      // captured only once it is a drag: a capture from pointerdown on would send the click
      // to the canvas instead of the node under the pointer (the quiz listens for that click)
      if (canvas.hasPointerCapture && !canvas.hasPointerCapture(event.pointerId)) {
        canvas.setPointerCapture(event.pointerId);
      }
      on.pan();
    }
    drag.panning = true;
    const rect = on.camera.rect();
    const scale = Math.max(drag.box.w / rect.width, drag.box.h / rect.height);
    on.camera.set({
      ...drag.box,
      x: drag.box.x - (event.clientX - drag.x) * scale,
      y: drag.box.y - (event.clientY - drag.y) * scale,
    });
  });
  const endDrag = () => {
    drag = null;
  };
  canvas.addEventListener("pointerup", (event) => {
    const hit = drag && drag.hit;
    const node = drag && drag.node;
    const still = drag && Math.abs(event.clientX - drag.x) + Math.abs(event.clientY - drag.y) < CLICK_PX;
    endDrag();
    if (hit && still) on.expand(hit);
    else if (node && still) on.node(node);
  });
  canvas.addEventListener("pointercancel", endDrag);
}
