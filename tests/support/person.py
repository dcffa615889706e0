"""Acting on a stepper as a person does, in the browser tests: the real keyboard and mouse
(page.keyboard, page.mouse), never events dispatched by script nor Playwright's element
actions. A button is clicked where it is on screen (``click``); the slider is moved by a click
on its track and its own arrow keys (``move_slider_to``); a drop-down list is opened with a
click and its choice made with the arrow keys and Enter (``choose``), never ``select_option``.
Where an action's effect is known, the helpers wait for that state, never for a time. Each
key of the stepper's one key map is pressed and its effect on the stepper checked."""

from __future__ import annotations

import contextlib
from typing import Any

from playwright.sync_api import TimeoutError as PlaywrightTimeout

# The stepping keys and what each does to the step, from the step before (+1, -1), or "first"
# / "last": forward and back in turn, from the first step, so that a short recording does
# too. o, u and b step by module: on a graph without modules they step by one.
MOVES: list[tuple[str, int | str]] = [
    ("End", "last"),
    ("Home", "first"),
    ("ArrowRight", 1),
    ("ArrowLeft", -1),
    ("ArrowDown", 1),
    ("ArrowUp", -1),
    ("PageDown", 1),
    ("PageUp", -1),
    ("Space", 1),
    ("Backspace", -1),
    ("Enter", 1),
    ("b", -1),
    ("o", 1),
    ("ArrowLeft", -1),
    ("u", 1),
]

# The first and last step a stepper shows (its slider's range).
RANGE = "(r) => { const s = r.querySelector('.gv-slider'); return [Number(s.min), Number(s.max)]; }"
UNDER = """([x, y]) => { const e = document.elementFromPoint(x, y);
  const node = e && e.closest('g.node[id]');
  return node ? node.id : e && e.outerHTML.slice(0, 120); }"""
KEY_TABLE = "(r) => { const t = r.querySelector('.gv-keyhelp'); return !!t && !t.hidden; }"
TEXT_SCALE = "(r) => r.style.getPropertyValue('--gv-text-scale') || '1'"
# resolves after two animation frames: a change of the stage's size (presentation mode, a
# resize) has been seen and the view refit by then
NEXT_FRAMES = (
    "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
)


def step_of(root: Any) -> int:
    return int(root.get_attribute("data-step"))


def classes(root: Any) -> str:
    return str(root.get_attribute("class") or "")


def centre(element: Any) -> tuple[float, float]:
    box = element.bounding_box()
    assert box is not None and box["width"] > 0, "not on screen"
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


# Whether an element has stayed put since the last animation frame and is what a click at its
# centre would hit (a person clicks what they see, once it stops moving): JupyterLab lays a
# notebook out again as outputs come and go, and a theme's stylesheet arrives late.
STEADY = """(e) => {
  const r = e.getBoundingClientRect();
  const key = [r.left, r.top, r.width, r.height].join(" ");
  const steady = e.__gvSteady === key;
  e.__gvSteady = key;
  if (!steady || r.width === 0 || r.height === 0) return false;
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return !!hit && (hit === e || e.contains(hit));
}"""
STEADY_MS = 10_000


def click(page: Any, element: Any) -> None:
    """A real mouse click on the centre of ``element``: scrolled into view first, then once it
    has stopped moving and nothing covers it (past ``STEADY_MS``, clicked where it is)."""
    if not hasattr(element, "owner_frame"):  # a Locator: the element it finds now
        element = element.element_handle()
    element.scroll_into_view_if_needed()
    frame = element.owner_frame() or page.main_frame
    # covered by design (a label over its box) or still moving: clicked as it is
    with contextlib.suppress(PlaywrightTimeout):
        frame.wait_for_function(STEADY, arg=element, polling="raf", timeout=STEADY_MS)
    page.mouse.click(*centre(element))


# The most a helper waits for the state its action leads to (ms): generous, for a busy machine.
WAIT_MS = 120_000


def wait_for_step(page: Any, root: Any, step: int) -> None:
    """Wait until ``root`` shows ``step`` and a frame has been drawn since (Playwright checks
    the state on each animation frame)."""
    page.wait_for_function(
        "([r, s]) => r.dataset.step === String(s)", arg=[root, step], timeout=WAIT_MS
    )


def click_to_step(page: Any, root: Any, selector: str, step: int) -> None:
    """Click the control ``selector`` of ``root`` (Next, Prev, Last...) and wait for ``step``."""
    click(page, root.query_selector(selector))
    wait_for_step(page, root, step)


def type_into(page: Any, field: Any, text: str) -> None:
    """Type ``text`` into a text field as a person does: a click in it, Ctrl+A over what it
    held, then the keys (each an input the page sees); waits until the field holds ``text``."""
    click(page, field)
    page.keyboard.press("Control+A")
    if text:
        page.keyboard.type(text)
    else:
        page.keyboard.press("Backspace")
    page.wait_for_function("([f, t]) => f.value === t", arg=[field, text], timeout=WAIT_MS)


# The slider's range, where it is now and whether it has the focus.
SLIDER = """(r) => { const s = r.querySelector('.gv-slider');
  return [Number(s.min), Number(s.max), Number(s.value), document.activeElement === s]; }"""
THUMB_PX = 16  # Chromium's range thumb: its centre travels the track less half a thumb each end


def move_slider_to(page: Any, root: Any, step: int, near: int = 40) -> None:
    """Move the stepper's slider to ``step`` as a person does: a click on its track where the
    step sits (unless the slider has the focus already, within ``near`` steps), then the
    slider's own arrow keys (one step each) for what the click could not hit; waits until the
    stepper shows the step. The slider keeps the focus: the next keys are the slider's (the
    stepper leaves keys typed into a field alone), until a click elsewhere."""
    slider = root.query_selector(".gv-slider")
    low, high, value, focused = page.evaluate(SLIDER, root)
    assert low <= step <= high, f"step {step} is off the slider ({low}..{high})"
    if not focused or abs(step - value) > near:
        slider.scroll_into_view_if_needed()
        box = slider.bounding_box()
        assert box is not None and box["width"] > THUMB_PX, "the slider is not on screen"
        share = (step - low) / (high - low) if high > low else 0.0
        x = box["x"] + THUMB_PX / 2 + share * (box["width"] - THUMB_PX)
        page.mouse.click(x, box["y"] + box["height"] / 2)
        low, high, value, focused = page.evaluate(SLIDER, root)
        assert focused, "a click on the slider did not give it the focus"
    key = "ArrowRight" if step > value else "ArrowLeft"
    for _ in range(abs(step - value)):
        page.keyboard.press(key)
    wait_for_step(page, root, step)


# The index of the chosen option of a drop-down list, and of the option with a value.
OPTIONS = """([s, value]) =>
  [s.selectedIndex, [...s.options].findIndex((o) => o.value === value)]"""


def choose(page: Any, select: Any, value: str) -> None:
    """Choose ``value`` in a drop-down list as a person does with the keyboard: a click opens
    the list, the arrow keys move to the choice, Enter takes it; waits until it is chosen.
    The list keeps the focus: keys meant for the stepper need a click on it first
    (``focus_on``), as a closed list takes the arrow keys, Home and End for itself."""
    now, wanted = page.evaluate(OPTIONS, [select, value])
    assert wanted >= 0, f"no option {value!r}"
    click(page, select)
    key = "ArrowDown" if wanted > now else "ArrowUp"
    for _ in range(abs(wanted - now)):
        page.keyboard.press(key)
    page.keyboard.press("Enter")
    page.wait_for_function("([s, v]) => s.value === v", arg=[select, value], timeout=WAIT_MS)


# where a person puts the focus before pressing keys: the panel, a button, the stage
FOCUS_PLACES = {"the stepper": ".gv-panel", "its Next button": ".gv-next", "its stage": ".gv-stage"}


def focus_on(page: Any, root: Any, where: str) -> None:
    """Click where ``FOCUS_PLACES`` names, as a person does: the stage at a corner, away
    from the nodes (a click on a node would step)."""
    target = root.query_selector(FOCUS_PLACES[where])
    if where == "its stage":
        box = target.bounding_box()
        page.mouse.click(box["x"] + 6, box["y"] + 6)
    else:
        click(page, target)


def press_moves(page: Any, root: Any, where: str, after: Any = None) -> list[str]:
    """Press every stepping key; returns what went wrong (key, where, expected, seen).
    ``after()`` runs after each key: the caller's check that nothing else changed."""
    first, last = page.evaluate(RANGE, root)
    wrong = []
    for key, move in MOVES:
        before = step_of(root)
        page.keyboard.press(key)
        expected = first if move == "first" else last if move == "last" else before + int(move)
        seen = step_of(root)
        if seen != expected:
            wrong.append(f"{key} ({where}): step {before} -> {seen}, expected {expected}")
        if after is not None:
            problem = after()
            if problem:
                wrong.append(f"{key} ({where}): {problem}")
    return wrong


def press_toggles(page: Any, root: Any, where: str) -> list[str]:
    """c, p, + and -, ? and Escape: each changes what it says, then is undone."""
    wrong = []

    def check(key: str, read: Any, expect_change: bool = True) -> None:
        before = read()
        page.keyboard.press(key)
        if (read() != before) != expect_change:
            wrong.append(f"{key} ({where}): {before!r} -> {read()!r}")

    check("c", lambda: root.get_attribute("data-follow"))
    check("c", lambda: root.get_attribute("data-follow"))
    check("p", lambda: "gv-playing" in classes(root))
    check("p", lambda: "gv-playing" in classes(root))
    check("+", lambda: page.evaluate(TEXT_SCALE, root))
    check("-", lambda: page.evaluate(TEXT_SCALE, root))
    check("?", lambda: page.evaluate(KEY_TABLE, root))
    check("Escape", lambda: page.evaluate(KEY_TABLE, root))
    check("?", lambda: page.evaluate(KEY_TABLE, root))
    check("?", lambda: page.evaluate(KEY_TABLE, root))
    return wrong


def has_class(page: Any, root: Any, name: str, present: bool = True) -> bool:
    """Whether ``root`` comes to have (or, with ``present=False``, to lack) the class ``name``
    within a bound: full screen, which presentation mode asks for, changes after the key."""
    try:
        page.wait_for_function(
            "([r, name, present]) => r.classList.contains(name) === present",
            arg=[root, name, present],
            timeout=10_000,
        )
    except PlaywrightTimeout:  # the state never came
        return False
    return True


def present_keys(page: Any, root: Any, after: Any = None) -> list[str]:
    """f enters presentation mode; every stepping key steps there too; . blanks, Escape shows
    the screen again, Escape leaves, F enters and f leaves."""
    wrong = []
    page.keyboard.press("f")
    if not has_class(page, root, "gv-present"):
        return ["f did not enter presentation mode"]
    wrong += press_moves(page, root, "presenting", after)
    page.keyboard.press(".")
    if not has_class(page, root, "gv-blank"):
        wrong.append(". did not blank the screen")
    page.keyboard.press("Escape")
    if not has_class(page, root, "gv-blank", False) or not has_class(page, root, "gv-present"):
        wrong.append("Escape did not show the blanked screen (and stay presenting)")
    page.keyboard.press("?")
    if not page.evaluate(KEY_TABLE, root):
        wrong.append("? showed no key table while presenting")
    page.keyboard.press("Escape")
    if page.evaluate(KEY_TABLE, root) or not has_class(page, root, "gv-present"):
        wrong.append("Escape did not close the key table first")
    page.keyboard.press("Escape")
    if not has_class(page, root, "gv-present", False):
        wrong.append("Escape did not leave presentation mode")
    page.keyboard.press("F")
    if not has_class(page, root, "gv-present"):
        wrong.append("F did not enter presentation mode")
    page.keyboard.press("f")
    if not has_class(page, root, "gv-present", False):
        wrong.append("F then f did not leave presentation mode")
    # the full screen F asked for arrives after f has left: it is given back, and a late
    # change of full screen does not bring presentation mode back
    try:
        page.wait_for_function("() => !document.fullscreenElement", timeout=10_000)
    except PlaywrightTimeout:
        wrong.append("the full screen stayed after presentation mode was left")
    if "gv-present" in classes(root):
        wrong.append("presentation mode came back after it was left")
    return wrong


def answer_quiz(page: Any, root: Any, node_for: Any, tap: bool = False) -> str:
    """Switch the quiz on (a click on its box), ask for the next step (a click on Next), then
    answer with a real click (or a tap) on the node that runs next (and, where the quiz asks
    for the gradient it sends too, type one and Enter); returns the verdict."""
    while step_of(root) < 0:  # the quiz asks about backward steps: past the forward frames
        click(page, root.query_selector(".gv-next"))
    toggle = root.query_selector(".gv-quiz-toggle")
    if not toggle.is_checked():
        click(page, toggle)
    assert toggle.is_checked()
    click(page, root.query_selector(".gv-next"))
    assert root.get_attribute("data-quiz") == "asking"
    asked = step_of(root) + 1
    node = root.query_selector(f'.gv-canvas svg [id="{node_for(asked)}"]')
    assert node is not None, node_for(asked)
    node.scroll_into_view_if_needed()  # as a person scrolls to what they mean to click
    x, y = centre(node)
    under = page.evaluate(UNDER, [x, y])
    assert under == node_for(asked), f"at the node's centre the page shows {under}"
    if tap:
        page.touchscreen.tap(x, y)
    else:
        page.mouse.click(x, y)
    chosen = root.query_selector(".gv-quiz-choice")
    if chosen is not None:  # a scalar lesson asks for the gradient too: typed, then Enter
        assert chosen.get_attribute("id") == node_for(asked)
        assert root.query_selector(".gv-quiz-number").is_visible()
        page.keyboard.type("1")
        page.keyboard.press("Enter")
    assert root.get_attribute("data-quiz") in ("right", "wrong"), root.get_attribute("data-quiz")
    assert step_of(root) == asked
    return str(root.query_selector(".gv-quiz-verdict").inner_text())
