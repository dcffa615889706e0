// Play: one step every STEP_MS / speed until the last step; the button shows Play or Pause.

export class Player {
  // `on`: atEnd() whether the last step is shown, restart() from the first step when it is,
  // step() one step on.
  constructor(root, button, speed, stepMs, on) {
    this.root = root;
    this.button = button;
    this.speed = speed;
    this.stepMs = stepMs;
    this.on = on;
    this.timer = null;
    speed.addEventListener("change", () => {
      if (this.timer !== null) {
        this.stop();
        this.toggle();
      }
    });
  }

  stop() {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.button.textContent = "▶ Play";
    this.root.classList.remove("gv-playing");
  }

  toggle() {
    if (this.timer !== null) return this.stop();
    this.on.restart();
    this.button.textContent = "⏸ Pause";
    this.root.classList.add("gv-playing");
    this.timer = setInterval(() => {
      if (this.on.atEnd()) return this.stop();
      this.on.step();
    }, this.stepMs / Number(this.speed.value));
  }
}
