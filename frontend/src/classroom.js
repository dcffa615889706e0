// The classroom: the stage's height, presentation mode with its text size, and the quiz
// (predict the next node, then reveal).

import { button, element } from "./dom.js";
import { activate, presentAction } from "./keys.js";

// The stage takes the window's height (less the toolbars), whatever the graph's own size:
// the SVG is scaled to fit ("meet"), so a small graph fills the stage instead of a corner.
export function stageHeight(home) {
  const natural = home.h * (4 / 3); // Graphviz sizes in pt; CSS px are 3/4 pt
  const room = Math.max(240, (window.innerHeight || 800) - 150);
  return `${Math.round(Math.max(Math.min(room, Math.max(natural, 0.75 * room)), 180))}px`;
}

// Presentation mode: the "Present" button or F; the graph fills the screen with the
// narration as a large caption; clickers (PageDown/PageUp, arrows, Space) step; "."
// blanks the screen; Escape leaves. Also the text-size control, in every mode.
const TEXT_SIZES = [1, 1.25, 1.5, 2];
export class Presenter {
  constructor(root, tools, actions) {
    this.root = root;
    this.actions = actions;
    this.caption = element("div", "gv-caption");
    this.caption.setAttribute("aria-live", "polite");
    root.append(this.caption);
    this.button = button("Present", "Presentation mode: full screen, large caption (F; Esc leaves)", () =>
      this.toggle(),
    );
    this.button.classList.add("gv-present-btn");
    const sizeBox = element("label", "gv-textsize", "text ");
    this.size = element("select", "gv-textsize-select");
    this.size.title = "Text size";
    for (const s of TEXT_SIZES) {
      const o = element("option", "", `${Math.round(s * 100)}%`);
      o.value = String(s);
      this.size.append(o);
    }
    this.size.addEventListener("change", () => this.setTextScale(Number(this.size.value)));
    sizeBox.append(this.size);
    tools.append(sizeBox);
    root.querySelector(".gv-toolbar").append(this.button);
    this.onResize = () => actions.fit();
    // Full screen changes arrive late, after the keys that asked for them: leave only when
    // this presentation's own full screen ends (the browser's Escape), never on the end of
    // an earlier one, and give back a full screen that arrives after the user has left.
    this.fullscreenOwned = false;
    this.onFullscreen = () => {
      const mine = document.fullscreenElement === this.root;
      if (mine && !this.presenting()) this.exitFullscreen();
      else if (mine) this.fullscreenOwned = true;
      else if (!document.fullscreenElement && this.presenting() && this.fullscreenOwned) this.leave();
    };
    document.addEventListener("fullscreenchange", this.onFullscreen);
  }

  presenting() {
    return this.root.classList.contains("gv-present");
  }

  setTextScale(scale) {
    this.root.style.setProperty("--gv-text-scale", String(scale));
    this.size.value = String(scale);
  }

  enter() {
    this.root.classList.add("gv-present");
    this.root.focus({ preventScroll: true });
    activate(this.root);
    window.addEventListener("resize", this.onResize);
    // real full screen where allowed (needs a user gesture); the fixed stage works without
    this.fullscreenOwned = document.fullscreenElement === this.root;
    if (this.root.requestFullscreen && !document.fullscreenElement) {
      this.root.requestFullscreen().catch(() => {});
    }
    this.actions.fit();
  }

  leave() {
    if (!this.presenting()) return;
    this.root.classList.remove("gv-present", "gv-blank");
    this.fullscreenOwned = false;
    window.removeEventListener("resize", this.onResize);
    this.exitFullscreen();
    this.actions.fit();
  }

  exitFullscreen() {
    if (document.fullscreenElement === this.root && document.exitFullscreen) {
      document.exitFullscreen().catch(() => {});
    }
  }

  toggle() {
    if (this.presenting()) this.leave();
    else this.enter();
  }

  update(index) {
    this.caption.textContent = this.actions.narration(index);
  }

  // The presentation keys; true when the key was used.
  key(event) {
    const action = presentAction(event.key, this.presenting());
    if (action === null) return false;
    if (action === "toggle") return this.use(event, () => this.toggle());
    const blank = this.root.classList.contains("gv-blank");
    if (action === "bigger" || action === "smaller") {
      const at = TEXT_SIZES.indexOf(Number(this.size.value));
      const to = Math.min(Math.max(at + (action === "smaller" ? -1 : 1), 0), TEXT_SIZES.length - 1);
      return this.use(event, () => this.setTextScale(TEXT_SIZES[to]));
    }
    if (action === "blank") {
      return this.use(event, () => this.root.classList.toggle("gv-blank"));
    }
    if (action === "escape") {
      return this.use(event, () => (blank ? this.root.classList.remove("gv-blank") : this.leave()));
    }
    return false; // moves are the stepping keys' (keys.js STEP_KEYS), in every mode
  }

  use(event, action) {
    event.preventDefault();
    action();
    return true;
  }

  close() {
    this.leave();
    document.removeEventListener("fullscreenchange", this.onFullscreen);
  }
}

// Predict, then reveal: with the quiz on, each backward step first asks which node runs next
// (click it) and, for scalar lessons, what gradient it sends; then it shows the step, grades
// the answer against the recorded order and values, says why, and keeps the score.
export class Quiz {
  constructor(root, tools, canvas, data, go) {
    this.root = root;
    this.data = data;
    this.answers = data.quiz || [];
    this.go = go;
    this.on = false;
    this.revealed = new Set();
    this.asking = null; // the step asked about
    this.choice = null;
    this.score = { right: 0, asked: 0 };
    const box = element("label", "gv-quizbox");
    this.toggle = element("input", "gv-quiz-toggle");
    this.toggle.type = "checkbox";
    this.toggle.addEventListener("change", () => this.setOn(this.toggle.checked));
    box.append(this.toggle, document.createTextNode(" quiz"));
    tools.append(box);
    this.card = element("div", "gv-quiz");
    this.card.hidden = true;
    this.prompt = element("div", "gv-quiz-prompt");
    this.number = element("input", "gv-quiz-number");
    this.number.type = "text";
    this.number.inputMode = "decimal";
    this.number.placeholder = "gradient it sends";
    this.reveal = button("Reveal", "Show the step and grade the answer", () => this.grade());
    this.reveal.classList.add("gv-quiz-reveal");
    this.number.addEventListener("keydown", (event) => {
      if (event.key === "Enter") this.grade();
    });
    this.verdict = element("div", "gv-quiz-verdict");
    this.tally = element("div", "gv-quiz-score");
    this.card.append(this.prompt, this.number, this.reveal, this.verdict, this.tally);
    root.insertBefore(this.card, root.querySelector(".gv-main"));
    canvas.addEventListener("click", (event) => this.pick(event));
  }

  setOn(on) {
    this.on = on;
    this.toggle.checked = on;
    this.card.hidden = !on;
    this.root.classList.toggle("gv-quizzing", on);
    if (!on) this.asking = null;
    this.showScore();
  }

  // Called before every move: a step forward the student has not predicted becomes a question.
  intercepts(from, to) {
    if (!this.on || to !== from + 1 || to < 1 || this.revealed.has(to)) return false;
    const answer = this.answers[to - 1];
    if (!answer) return false;
    this.asking = to;
    this.choice = null;
    this.prompt.textContent = `Step ${to}: which node runs next? Click it on the graph.`;
    this.number.hidden = answer.value === null || answer.value === undefined;
    this.number.value = "";
    this.verdict.textContent = "";
    this.root.dataset.quiz = "asking";
    return true;
  }

  pick(event) {
    if (this.asking === null) return;
    const node = event.target.closest && event.target.closest("g.node[id]");
    if (!node) return;
    for (const e of this.root.querySelectorAll(".gv-quiz-choice")) e.classList.remove("gv-quiz-choice");
    node.classList.add("gv-quiz-choice");
    this.choice = node.id;
    const label = node.querySelector("text");
    this.prompt.textContent = `Step ${this.asking}: you chose ${label ? label.textContent : node.id}.`;
    if (this.number.hidden) this.grade();
    else this.number.focus();
  }

  grade() {
    const step = this.asking;
    if (step === null || this.choice === null) {
      this.verdict.textContent = "Click the node you think runs next first.";
      return;
    }
    const answer = this.answers[step - 1];
    const nodeRight = this.choice === answer.node;
    let valueRight = true;
    let valueText = "";
    if (!this.number.hidden) {
      const given = Number(this.number.value.trim());
      const want = answer.value;
      valueRight = this.number.value.trim() !== "" && Math.abs(given - want) <= 1e-6 * Math.max(1, Math.abs(want));
      valueText = valueRight ? ` It sends ${want}: right.` : ` It sends ${want}, not ${this.number.value.trim() || "(nothing)"}.`;
    }
    const right = nodeRight && valueRight;
    this.score.asked += 1;
    if (right) this.score.right += 1;
    const ready = answer.ready.map((r) => `${r.type} (seq ${r.seq})`).join(", ");
    const why =
      `Ready then: ${ready}. The engine runs the ready node with the highest sequence number: ${answer.type}.`;
    const narration = String((this.data.steps[step] || {}).narration || "");
    this.verdict.textContent = `${nodeRight ? "Right node." : "Wrong node."}${valueText} ${why} ${narration}`;
    this.root.dataset.quiz = right ? "right" : "wrong";
    for (const e of this.root.querySelectorAll(".gv-quiz-choice")) e.classList.remove("gv-quiz-choice");
    this.asking = null;
    this.revealed.add(step);
    this.showScore();
    this.go(step);
  }

  showScore() {
    this.tally.textContent = `score ${this.score.right} / ${this.score.asked}`;
  }
}
