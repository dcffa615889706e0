// The tensor records' grad field in the combined view, filled in as the replay reaches the
// AccumulateGrad that writes it.

// The tensor records' grad field during the replay: None until the leaf's AccumulateGrad
// runs, then the value it wrote (c.grad None -> 36), as in the lectures' combined view.
export class GradFields {
  constructor(updates) {
    this.updates = updates;
  }
  apply(view, index) {
    // only the fields whose step lies between the step shown last and this one change
    const last = this.shown && this.shown.view === view ? this.shown.index : null;
    this.shown = { view, index };
    const lo = Math.min(last === null ? -Infinity : last, index);
    const hi = Math.max(last === null ? Infinity : last, index);
    const fields = view.gradFields || (view.gradFields = new Map());
    if (view.byId.want) {
      view.byId.want(this.updates.filter((u) => u.step >= lo && u.step <= hi && !fields.has(u.id)).map((u) => u.id));
    }
    for (const u of this.updates) {
      if (u.step < lo || u.step > hi) continue;
      if (!fields.has(u.id)) fields.set(u.id, gradField(view.byId.get(u.id)));
      const field = fields.get(u.id);
      if (!field) continue;
      field.textContent = index >= u.step ? u.after : u.before;
      field.classList.toggle("gv-grad-new", index === u.step);
    }
  }
}

// The text after a tensor record's "grad" key, or null.
function gradField(box) {
  if (!box) return null;
  const texts = [...box.querySelectorAll("text")];
  const key = texts.findIndex((t) => t.textContent === "grad");
  return key < 0 || key + 1 >= texts.length ? null : texts[key + 1];
}
