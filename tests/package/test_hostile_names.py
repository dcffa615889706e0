"""Hostile names through every source to every output: DOT, SVG, the replay page, the widget.

Each source (``names=``, ``watch()`` variables, ``nn.ModuleDict`` keys, custom
``autograd.Function`` and module class names, theme legend labels) gets all hostile strings
in one recording, so each view is laid out once. The real ``dot`` must accept the DOT
without a word on stderr; the SVG must parse as XML, hold only SVG elements and no ``on*``
attribute, and show each string as text (shortened to ``MAX_LABEL_CHARS`` with its
control characters made visible); the panel data keeps every string whole. The browser test
opens the pages in Chromium and steps through them.
"""

from __future__ import annotations

import dataclasses
import json
import runpy
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import gradviz
from gradviz.escape import MAX_LABEL_CHARS, html_text, json_text, shorten, visible_text
from gradviz.explain.steps import describe_step
from gradviz.model.recording import Recording
from gradviz.render.theme import DEFAULT, THEMES
from gradviz.stepper.page import (
    json_for_script,
    replay_html,
    static_html,
    stepper_payload,
    unpack_state,
)

SVG = "{http://www.w3.org/2000/svg}"
XLINK_TITLE = "{http://www.w3.org/1999/xlink}title"
LONG = "ﬀ" + "x" * 9_998 + "Ω"  # 10,000 characters, distinct ends

HOSTILE = {
    "script": "<script>alert(1)</script>",
    "img": "<img src=x onerror=alert(1)>",
    "text": "</text>",
    "cdata": "]]>",
    "comment": "<!-- -->",
    "quotes": "say \"hi\" 'there'",
    "backslash": 'a\\b \\" end\\',
    "dot": "{ } -> [ ] ; | a:b",
    "amp": "&amp; &lt;",
    "whitespace": "new\nline\ttab",
    "c0": "".join(chr(code) for code in range(1, 32)) + "\x7f",
    "nul": "a\x00b",
    "rtl": "abc\u200fdef\u202eghi",
    "emoji": "👩‍👩‍👧‍👦 🏳️‍🌈 👍🏽",
    "surrogate": "lone\ud800half",
    "long": LONG,
}
# type() refuses a class name with a NUL and Python cannot encode a lone surrogate in one
CLASS_NAMES = {k: v for k, v in HOSTILE.items() if k not in ("nul", "surrogate")}


def on_screen(text: str) -> str:
    """What a label must show (the spec, written out): at most MAX_LABEL_CHARS characters,
    the last an ellipsis when cut; C0 controls and DEL as control pictures; C1, surrogates,
    U+FFFE/FFFF and bidi embeddings, overrides and isolates as U+FFFD."""
    if len(text) > MAX_LABEL_CHARS:
        text = text[: MAX_LABEL_CHARS - 1] + "…"
    out = []
    for char in text:
        code = ord(char)
        if code < 0x20:
            out.append(chr(0x2400 + code))
        elif code == 0x7F:
            out.append("\u2421")
        elif (
            0x80 <= code <= 0x9F  # C1 controls
            or 0xD800 <= code <= 0xDFFF  # unpaired surrogates
            or code in (0xFFFE, 0xFFFF)
            or 0x202A <= code <= 0x202E  # bidi embeddings and overrides
            or 0x2066 <= code <= 0x2069  # bidi isolates
        ):
            out.append("\ufffd")
        else:
            out.append(char)
    return "".join(out)


def test_the_spec_by_example() -> None:
    assert on_screen("a\nb\tc") == "a␊b␉c"
    assert on_screen("x" * 41) == "x" * 39 + "…" and len(on_screen(LONG)) == MAX_LABEL_CHARS
    assert on_screen("\u202eabc") == "\ufffdabc"
    for text in HOSTILE.values():
        assert visible_text(shorten(text)) == on_screen(text)


def test_html_text_escapes_and_shortens() -> None:
    assert html_text("<b>&'\"") == "&lt;b&gt;&amp;&#x27;&quot;"
    assert html_text(LONG, None).endswith("Ω") and len(html_text(LONG)) == MAX_LABEL_CHARS
    assert html_text("👩‍👩‍👧‍👦") == "👩‍👩‍👧‍👦"  # the zero-width joiners stay


def test_json_text_writes_a_lone_surrogate_as_an_escape() -> None:
    text = json_text({"name": HOSTILE["surrogate"]})
    text.encode("utf-8")  # would raise with the raw surrogate
    assert json.loads(text) == {"name": HOSTILE["surrogate"]}
    script = json_for_script(HOSTILE)
    for bad in ("</", "<!--", "]]>", "\u2028", "\u2029"):
        assert bad not in script
    assert json.loads(script) == HOSTILE


# -- checks ---------------------------------------------------------------------------------
def dot_accepts(dot: str) -> str:
    """The real dot lays the DOT out with nothing on stderr; returns the SVG."""
    done = subprocess.run(["dot", "-Tsvg"], input=dot.encode("utf-8"), capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr == b"", done.stderr.decode()  # no syntax warning, no unknown colour
    return done.stdout.decode("utf-8")


def svg_texts(svg: str) -> tuple[list[str], list[str]]:
    """The SVG parsed as XML and found inert: its <text> strings and its tooltips."""
    root = ET.fromstring(svg)
    texts: list[str] = []
    titles: list[str] = []
    for element in root.iter():
        assert isinstance(element.tag, str) and element.tag.startswith(SVG), element.tag
        assert element.tag not in (f"{SVG}script", f"{SVG}foreignObject"), element.tag
        for name in element.attrib:
            assert not name.rpartition("}")[2].lower().startswith("on"), (element.tag, name)
            assert not element.attrib[name].strip().lower().startswith("javascript:")
        if element.tag == f"{SVG}text":
            texts.append("".join(element.itertext()).replace("\xa0", " "))
        if XLINK_TITLE in element.attrib:
            titles.append(element.attrib[XLINK_TITLE])
    return texts, titles


def assert_shown(svg: str, shown: dict[str, str]) -> None:
    """Each string shows as text, shortened and visible; long ones whole in a tooltip."""
    texts, titles = svg_texts(svg)
    assert all(len(text) <= 2 * MAX_LABEL_CHARS for text in texts), max(texts, key=len)[:80]
    joined = "\n".join(texts)
    for key, text in shown.items():
        assert on_screen(text) in joined, (key, on_screen(text), texts)
        if len(text) > MAX_LABEL_CHARS:
            assert any(visible_text(text) in title for title in titles), key


def panel_strings(payload: dict[str, Any]) -> str:
    """Every string of the stepper's panel data (not the SVGs), joined."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(payload["data"])
    return "\n".join(found)


class _Tags(HTMLParser):
    """Counts what an HTML parser sees as elements (script bodies stay opaque)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: dict[str, Any] = {"scripts": 0, "imgs": 0, "handlers": []}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found["scripts"] += tag == "script"
        self.found["imgs"] += tag == "img"
        self.found["handlers"] += [name for name, _ in attrs if name.startswith("on")]


def page_tags(page: str) -> dict[str, Any]:
    parser = _Tags()
    parser.feed(page)
    parser.close()
    return parser.found


def check_outputs(
    recording: Recording, shown: dict[str, str], views: tuple[str, ...], **options: Any
) -> dict[str, Any]:
    """DOT, SVG of each view, the stepper payload's SVGs, the page and the static fallback."""
    for view in views:
        assert_shown(dot_accepts(recording.graph.to_dot(view=view, **options)), shown)
    payload = stepper_payload(recording, **options)
    for svg in payload["svgs"].values():
        svg_texts(svg)
    assert_shown(payload["svgs"]["backward"], shown)
    page = replay_html(recording, **options)
    page.encode("utf-8")
    assert unpack_state(page)["svgs"] == payload["svgs"]  # JSON, or gzip+base64 when big
    # the damaged-file check, the data and the stepper
    assert page_tags(page) == {"scripts": 3, "imgs": 0, "handlers": []}
    static = static_html(recording, **options)
    assert page_tags(static) == {"scripts": 0, "imgs": 0, "handlers": []}
    assert_shown(static[static.index("<svg") : static.rindex("</svg>") + 6], shown)
    return payload


# -- the sources ------------------------------------------------------------------------------
def hostile_leaves() -> dict[str, torch.Tensor]:
    return {
        text: torch.tensor([float(i), 1.0], requires_grad=True)
        for i, text in enumerate(HOSTILE.values())
    }


def total(leaves: dict[str, torch.Tensor]) -> torch.Tensor:
    return torch.stack([(t * t * (i + 1)).sum() for i, t in enumerate(leaves.values())]).sum()


def record_names(leaves: dict[str, torch.Tensor] | None = None) -> Recording:
    leaves = hostile_leaves() if leaves is None else leaves
    return gradviz.record(total(leaves), names=leaves)


def custom_function(name: str) -> type[torch.autograd.Function]:
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x * 3

    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad * 3

    body = {"forward": staticmethod(forward), "backward": staticmethod(backward)}
    return type(name, (torch.autograd.Function,), body)


def modules_model() -> tuple[nn.Module, torch.Tensor]:
    """A ModuleDict keyed by the hostile strings, each layer of a hostile class."""
    layers = nn.ModuleDict(
        {key: type(name, (nn.Linear,), {})(2, 2) for key, name in CLASS_NAMES.items()}
    )
    layers.update({text.replace(".", "·"): nn.Tanh() for text in HOSTILE.values()})

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = layers

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for layer in self.layers.values():
                x = layer(x)
            return x.sum()

    return Model(), torch.ones(1, 2)


@pytest.mark.needs_dot
def test_names_given_to_record() -> None:
    recording = record_names()
    payload = check_outputs(recording, HOSTILE, ("backward", "combined"))
    panel = panel_strings(payload)
    for key, text in HOSTILE.items():
        assert text in panel, key  # whole, unescaped: the front end sets it as text
    watched, plain = hostile_leaves(), hostile_leaves()
    record_names(watched)  # gradviz changed nothing: the gradients are PyTorch's own
    total(plain).backward()
    for text in HOSTILE.values():
        assert torch.equal(watched[text].grad, plain[text].grad), text  # type: ignore[arg-type]


@pytest.mark.needs_dot
def test_custom_function_class_names() -> None:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x
    for name in CLASS_NAMES.values():
        y = custom_function(name).apply(y)
    out = y.sum()
    recording = gradviz.record(out, names={"x": x}, retain_graph=True)
    got = x.grad.clone()  # type: ignore[union-attr]
    x.grad = None
    (expected,) = torch.autograd.grad(out, x)
    assert torch.equal(got, expected)
    # PyTorch names a custom Function's node "<class name>Backward"
    types = {key: f"{name}Backward" for key, name in CLASS_NAMES.items()}
    assert {s.type_name for s in recording.steps} >= set(types.values())
    payload = check_outputs(recording, types, ("backward", "combined"))
    panel = panel_strings(payload)
    for key, text in types.items():
        assert text in panel, key


@pytest.mark.needs_dot
def test_module_dict_keys_and_module_class_names() -> None:
    model, x = modules_model()
    with gradviz.watch(model) as w:
        loss = model(x)
    recording = w.record(loss)
    keys = {key: f"layers.{text.replace('.', '·')}" for key, text in HOSTILE.items()}
    classes = {f"class {key}": name for key, name in CLASS_NAMES.items()}
    payload = check_outputs(recording, {}, ("backward", "combined", "forward"))
    assert {"modules", "collapsed-1"} <= set(payload["svgs"])
    # module boxes: path over class name, each shortened on its own
    assert_shown(payload["svgs"]["collapsed-1"], {**keys, **classes})
    clusters = {key: f"layers.{key} ({name})" for key, name in CLASS_NAMES.items()}
    assert_shown(dot_accepts(recording.graph.to_dot(view="forward", modules=True)), clusters)
    panel = panel_strings(payload)
    for key, text in keys.items():
        assert text in panel, key  # the panel names each step's module whole


@pytest.mark.needs_dot
def test_variable_names_seen_by_watch(tmp_path: Path) -> None:
    """Python identifiers can only be letters: right-to-left and odd-unicode ones."""
    script = tmp_path / "names.py"
    script.write_text(
        "import torch, gradviz\n"
        "with gradviz.watch() as w:\n"
        "    שלום = torch.tensor([1.0, 2.0], requires_grad=True)\n"
        "    مرحبا_עולם = שלום * 3\n"
        "    ﬀ𝔥ℌ = (مرحبا_עולם.exp()).sum()\n"
        "recording = w.record(ﬀ𝔥ℌ)\n",
        encoding="utf-8",
    )
    recording = runpy.run_path(str(script))["recording"]
    names = {"he": "שלום", "mixed": "مرحبا_עולם", "nfkc": "ffhH"}
    # Python folds identifiers to NFKC: 'ﬀ𝔥ℌ' is the variable 'ffhH'
    assert {t.name for t in recording.graph.tensors} >= set(names.values())
    # the backward view draws the root and the leaves; the others every named tensor
    payload = check_outputs(recording, {k: names[k] for k in ("he", "nfkc")}, ("backward",))
    for view in ("combined", "forward"):
        assert_shown(dot_accepts(recording.graph.to_dot(view=view)), names)
    panel = panel_strings(payload)
    assert all(name in panel for name in names.values())


@pytest.mark.needs_dot
@pytest.mark.parametrize("chunk", [0, 4, 8, 12])
def test_theme_legend_labels(chunk: int) -> None:
    """A custom theme is dataclasses.replace of a preset; its legend labels are free text."""
    texts = list(HOSTILE.values())[chunk : chunk + 4]
    base = THEMES["default"]
    roles = ("leaf", "constant", "branch", "node")
    theme = dataclasses.replace(
        base,
        name="hostile",
        **{
            role: dataclasses.replace(getattr(base, role), legend=text)
            for role, text in zip(roles, texts, strict=True)
        },
    )
    recording = record_names()
    shown = dict(zip(roles, texts, strict=True))
    check_outputs(recording, shown, ("backward",), theme=theme)


@pytest.mark.parametrize(
    ("role", "field", "value"),
    [
        ("leaf", "fill", 'red"><B>x</B'),
        ("step", "active_border", "red}</style><img src=x onerror=alert(1)>"),
        ("step", "active_width", "3;}</style>"),
        ("node", "border_style", 'dashed" onload="x'),
    ],
)
def test_theme_colours_must_be_colours(role: str, field: str, value: str) -> None:
    with pytest.raises(ValueError, match=f"{field} must be"):
        dataclasses.replace(
            DEFAULT, **{role: dataclasses.replace(getattr(DEFAULT, role), **{field: value})}
        )


@pytest.mark.needs_dot
def test_big_graph_layout_reads_hostile_labels(monkeypatch: pytest.MonkeyPatch) -> None:
    """Graphs past LARGE_GRAPH_NODES are placed by gradviz.render.layered, which re-reads the
    DOT line by line: hostile labels must not confuse it (lowered here to stay fast)."""
    from gradviz.render import layered as biglayout
    from gradviz.render.backend import run_dot

    monkeypatch.setattr(biglayout, "LARGE_GRAPH_NODES", 10)
    dot = record_names().graph.to_dot()
    assert biglayout.count_nodes(dot) > 10
    svg = run_dot(dot).decode("utf-8")  # drawn whole: no GradvizWarning
    assert_shown(svg, HOSTILE)


def test_widget_state_travels_as_strict_utf8() -> None:
    """Jupyter packs widget state as strict UTF-8: a lone surrogate in a name must not
    stop the stepper from showing (it arrives as U+FFFD, as a browser would show it)."""
    pytest.importorskip("anywidget")
    json_packer = pytest.importorskip("jupyter_client.session").json_packer
    from gradviz.stepper.widget import Stepper

    widget = Stepper(record_names())
    state = widget.get_state()
    json_packer(state)
    panel = panel_strings({"data": state["data"]})
    assert "lone\ufffdhalf" in panel and LONG in panel and HOSTILE["script"] in panel


# -- the browser ------------------------------------------------------------------------------
INJECTED = """() => ({
  imgs: document.querySelectorAll("img").length,
  scripts: document.querySelectorAll("script").length,
  foreign: document.querySelectorAll("svg script, svg foreignObject, iframe, object, embed").length,
  handlers: [...document.querySelectorAll("*")].filter((e) =>
      [...e.attributes].some((a) => a.name.toLowerCase().startsWith("on"))).length,
})"""

# The longest label's length.
LONGEST = """(root) => Math.max(...[...root.querySelectorAll("svg text")].map((t) =>
  t.textContent.length))"""


def step_through(page: Any, root: Any) -> dict[str, Any]:
    """Step to the end with the Next button, clicked with the mouse: the panel text at every
    step, the longest label and the last step."""
    from tests.support.person import click_to_step

    panels = []
    for _ in range(500):
        panels.append(root.query_selector(".gv-panel").text_content())
        if root.query_selector(".gv-next").is_disabled():
            break
        click_to_step(page, root, ".gv-next", int(root.get_attribute("data-step")) + 1)
    return {"panels": panels, "longest": page.evaluate(LONGEST, root),
            "step": root.get_attribute("data-step")}  # fmt: skip


def widget_page(recording: Recording) -> str:
    """The widget's front end hosted as anywidget hosts it: its ESM's render({model, el})
    over the Stepper's synced traits (JSON on the wire), with its CSS."""
    from gradviz.stepper.page import asset_text
    from gradviz.stepper.widget import Stepper

    widget = Stepper(recording)
    state = {name: getattr(widget, name) for name in ("svgs", "data", "css", "step", "view")}
    shipped = {"state": state, "esm": widget._esm}  # the module, imported as anywidget does
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        f"<style>{asset_text('stepper.css')}</style></head><body>"
        f'<script type="application/json" id="state">{json_for_script(shipped)}</script>'
        '<div id="host"></div><script type="module">\n'
        'const { state, esm } = JSON.parse(document.getElementById("state").textContent);\n'
        'const url = URL.createObjectURL(new Blob([esm], { type: "text/javascript" }));\n'
        "const widget = (await import(url)).default;\n"
        f"{LOCAL_MODEL}\n"
        'widget.render({ model: new LocalModel(state), el: document.getElementById("host") });\n'
        "</script></body></html>"
    )


# anywidget's model surface over local state, as the page's own stand-in has it
LOCAL_MODEL = """class LocalModel {
  constructor(state) { this.state = { ...state }; this.handlers = new Map(); }
  get(key) { return this.state[key]; }
  set(key, value) {
    if (this.state[key] === value) return;
    this.state[key] = value;
    for (const fn of this.handlers.get(`change:${key}`) || []) fn();
  }
  save_changes() {}
  send() {}
  on(event, fn) {
    if (!this.handlers.has(event)) this.handlers.set(event, new Set());
    this.handlers.get(event).add(fn);
  }
  off(event, fn) { this.handlers.get(event)?.delete(fn); }
}"""


@pytest.mark.browser
@pytest.mark.needs_dot
def test_pages_stay_inert_in_chromium(browser: Any, tmp_path: Path) -> None:
    from tests.support.browser import open_local

    pytest.importorskip("anywidget")
    names = record_names()
    model, x = modules_model()
    with gradviz.watch(model) as w:
        loss = model(x)
    modules = w.record(loss)
    pages = {
        "replay-names": names.save(tmp_path / "names.html"),
        "replay-modules": modules.save(tmp_path / "modules.html"),
        "widget": tmp_path / "widget.html",
        "fallback": tmp_path / "fallback.html",
    }
    pages["widget"].write_text(widget_page(names), encoding="utf-8")
    from gradviz.stepper.widget import Stepper

    bundle = Stepper(names)._repr_mimebundle_()
    assert bundle is not None
    pages["fallback"].write_text(
        f'<!DOCTYPE html><meta charset="utf-8"><body>{bundle[0]["text/html"]}</body>',
        encoding="utf-8",
    )
    for name, path in pages.items():
        page, _requests, errors = open_local(browser, path)
        dialogs: list[str] = []

        def opened(dialog: Any, seen: list[str] = dialogs) -> None:
            seen.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", opened)
        # loaded: every inline script and image handler that could run has run
        page.wait_for_function("() => document.readyState === 'complete'")
        # the widget and the notebook's fallback: their data and their front end; pages: + the
        # damaged-file check
        scripts = {"fallback": 2, "widget": 2}.get(name, 3)
        assert page.evaluate(INJECTED) == {
            "imgs": 0, "scripts": scripts, "foreign": 0, "handlers": 0
        }, name  # fmt: skip
        root = page.wait_for_selector(".gv-stepper")
        walked = step_through(page, root)
        assert walked["longest"] <= 2 * MAX_LABEL_CHARS, name
        assert int(walked["step"]) == len(
            names.steps if name != "replay-modules" else modules.steps
        )
        panels = "\n".join(walked["panels"])
        assert LONG in panels, name  # the panel shows the whole 10,000 characters
        if name != "replay-modules":
            assert HOSTILE["script"] in panels and HOSTILE["emoji"] in panels, name
        assert page.evaluate(INJECTED)["handlers"] == 0, name
        assert dialogs == [] and errors == [], (name, dialogs, errors)
        page.close()


def test_direction_controls_in_a_name_stay_inside_it_in_the_narration() -> None:
    """An override (U+202E) in a name would reorder the rest of the panel's sentence: the
    narration isolates such a name (U+2068 ... U+2069), and keeps plain names as they are."""
    a = torch.tensor([2.0, 3.0], requires_grad=True)
    b = torch.tensor([5.0, 7.0], requires_grad=True)
    evil, plain = HOSTILE["rtl"], "b"
    loss = (a * b).sum()
    recording = gradviz.record(loss, names={evil: a, plain: b})
    mul = next(s for s in recording.steps if s.type_name == "MulBackward0")
    text = describe_step(recording, mul.index)["narration"]
    assert f"\u2068{evil}\u2069" in text
    assert evil not in text.replace(f"\u2068{evil}\u2069", "")  # never bare
    assert "\u2068b\u2069" not in text and "b" in text
    leaf = recording.graph.tensor(evil)
    acc = next(s for s in recording.steps if s.node_id == leaf.node_id)
    assert f"\u2068{evil}\u2069" in describe_step(recording, acc.index)["narration"]
