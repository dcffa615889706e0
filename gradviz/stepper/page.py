"""The stepper's data and the standalone replay page: one HTML file, no network.

The notebook widget (``gradviz.stepper.widget``) and the page share ``stepper_payload`` and the one
front end: ES modules in ``frontend/``, bundled by esbuild into ``assets/stepper-*.js``. Every
user string reaches the page inside JSON whose ``<``, ``>`` and ``&`` are escaped, and the
front end inserts it as text, never as markup.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import html
import json
import re
import warnings
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gradviz.errors import GradvizError, GradvizWarning
from gradviz.escape import json_for_script, json_text
from gradviz.model.recording import Recording, summaries_once
from gradviz.progress import progress
from gradviz.render.frontier import MAX_THINGS, auto_frontier, collapse_spec
from gradviz.render.pagesvg import page_svg
from gradviz.render.theme import DARK, DEFAULT, Theme
from gradviz.render.watched import collapsed_members
from gradviz.replay.frames import (
    beyond_dot,
    classes_at,
    first_step,
    forward_css,
    replay_born,
    replay_data,
    replay_layout,
    replay_options,
    start_layouts,
)
from gradviz.replay.modules import (
    AUTO_VIEW,
    module_css,
    module_views,
    view_collapse,
    view_render_options,
)
from gradviz.replay.overlays import explained, replay_overlay_keys
from gradviz.replay.styles import step_css
from gradviz.stepper.damaged import CHECK_SCRIPT, END_MARKER
from gradviz.stepper.sevenbit import from_seven_bit, to_seven_bit

__all__ = [
    "asset_text",
    "available_views",
    "json_for_script",
    "page_script",
    "replay_html",
    "static_html",
    "static_svg",
    "stepper_payload",
    "unpack_state",
]

VIEWS = ("backward", "combined")
SCOPE = "#GVROOT"  # replaced by the front end with a selector unique to each stepper


def _asset_dirs() -> list[Path]:
    package = Path(__file__).resolve().parents[1]  # gradviz/
    return [package / "assets", package.parent / "assets"]  # the wheel's copy, then the checkout's


def asset_text(name: str) -> str:
    """A front-end file: shipped inside the package, or the repo's assets/ when editable."""
    for folder in _asset_dirs():
        path = folder / name
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise FileNotFoundError(
        f"gradviz's front-end file {name!r} is missing (looked in "
        f"{', '.join(str(d) for d in _asset_dirs())}); reinstall torch-gradviz"
    )


def _dark_remap(light: Theme, dark: Theme) -> str:
    """CSS that recolours an SVG drawn with ``light`` into ``dark`` (CSS beats attributes)."""
    pairs: dict[str, str] = {}

    def add(a: str, b: str) -> None:
        pairs.setdefault(a.lower(), b)

    add(light.background, dark.background)
    for name in ("leaf", "constant", "branch", "node"):
        a, b = getattr(light, name), getattr(dark, name)
        add(a.fill, b.fill)
        add(a.border, b.border)
        add(a.text, b.text)
    add(light.text, dark.text)
    add(light.edge, dark.edge)
    add(light.edge_label, dark.edge_label)
    add(light.step.grad_text, dark.step.grad_text)
    rules = []
    for a, b in pairs.items():
        for attr in ("fill", "stroke"):
            rules.append(f'{SCOPE}.gv-dark svg [{attr}="{a}" i]{{{attr}:{b}}}')
    return "".join(rules)


def available_views(recording: Recording) -> tuple[str, ...]:
    """Every view the stepper can show for this recording, in the view menu's order."""
    return (*VIEWS, *module_views(recording))


def chosen_views(recording: Recording, views: Sequence[str] | None) -> tuple[str, ...]:
    """``views`` checked against what this recording has (None: all of them)."""
    every = available_views(recording)
    if views is None:
        return every
    if isinstance(views, str):
        views = [views]
    unknown = [v for v in views if v not in every]
    if unknown or not views:
        raise GradvizError(
            f"views={list(views)!r}: this recording has the views {list(every)}; pass a "
            "non-empty list of them, e.g. views=['backward'] to leave the watched combined "
            "view out"
        )
    return tuple(v for v in every if v in views)


COLLAPSED_DEFAULT_NODES = 150  # above this many nodes the stepper opens on a module view


def default_view(recording: Recording, views: Sequence[str], collapse: object = None) -> str:
    """The view the stepper opens on: with module data, the collapsed view whose boxes the
    frontier picks (``collapsed-auto``: some 15 to 60 things, no box holding most of the
    model) where the whole backward graph is more than a reader takes in at once;
    ``collapse=`` a depth opens that depth's view, module names the ``collapsed-auto`` view
    drawn with them. Else the backward view."""
    collapse = collapse_spec(collapse)
    if isinstance(collapse, int):
        wanted = f"collapsed-{collapse}"
        if wanted not in views:
            raise GradvizError(
                f"collapse={collapse}: this recording's collapsed views are "
                f"{[v for v in views if v.startswith('collapsed-')]}"
            )
        return wanted
    # the frontier counts what the backward view draws (nodes and parameter boxes): a graph
    # of fewer than MAX_THINGS nodes may still draw more than MAX_THINGS things
    if AUTO_VIEW in views and (
        collapse is not None
        or len(recording.graph.nodes) > MAX_THINGS
        or auto_frontier(recording.graph)
    ):
        return AUTO_VIEW
    collapsed = [v for v in views if v.startswith("collapsed-")]
    if collapsed and len(recording.graph.nodes) > COLLAPSED_DEFAULT_NODES:
        wanted = f"collapsed-{DEFAULT_COLLAPSE_DEPTH}"
        return wanted if wanted in collapsed else collapsed[-1]
    return "backward" if "backward" in views else views[0]


def opening_step(recording: Recording, born: dict[str, int]) -> int:
    """Where the page opens: the first forward frame that draws something (``born``: when
    the opening view's elements appear; an op on inputs that need no gradient, such as
    slicing the token ids, draws nothing) of a graph that reads whole (at most
    ``MAX_THINGS`` nodes: a lesson's story starts with its forward pass, and the camera
    frames what exists so far) or whose first frame already shows most of the opening view;
    else the seed, where the backward pass starts at the loss (a model's first forward op
    alone on its stage tells nothing)."""
    first = first_step(recording)
    if first < 0 and born:
        first = min(0, max(first, min(born.values())))
    if first < 0 and len(recording.graph.nodes) <= MAX_THINGS:
        return first
    if first < 0 and born and sum(at <= first for at in born.values()) * 2 >= len(born):
        return first
    return 0


def layout_view(
    recording: Recording, view: str, schedule: dict[str, Any], index: int, **options: Any
) -> tuple[str, dict[str, int]]:
    """One view laid out (cached on the recording), its ``<svg>`` styled at step ``index``,
    and when each element appears during the forward frames (``replay_born``)."""
    options.pop("view", None)
    drawn = view_render_options(options, view)
    with start_layouts(recording, [drawn]):  # its DOT written once
        template, _ = replay_layout(recording, **drawn)
        born = replay_born(recording, [view], **options).get(view, {})
    with_born = {**schedule, "born": {view: born}} if born else schedule
    return page_svg(template.render(classes_at(with_born, index, view))), born


def stepper_payload(
    recording: Recording,
    step: int | None = None,
    views: Sequence[str] | None = None,
    lazy: bool = False,
    explain: bool | None = None,
    **options: Any,
) -> dict[str, Any]:
    """The views laid out, the schedule, the panel data and the stylesheets.

    ``explain``: ship the memory and gradient-health toggles' data (default: yes; the
    offline page leaves them out where they would make it heavier than
    ``PAGE_BYTES_PER_NODE``, see ``replay_html``).

    ``views`` leaves views out (default: every view, ``available_views``); ``lazy`` lays
    out only the view the stepper opens on (the widget asks the kernel for the others when
    first chosen; ``data["views"]`` lists them all). ``step`` styles the shipped SVGs
    (default: the last step); under ``watch()`` negative steps are the forward frames
    (``gradviz.replay.frames``), and ``data`` says where they start.
    """
    options.pop("view", None)
    collapse = collapse_spec(options.pop("collapse", None))
    chosen = chosen_views(recording, views)
    # one batch: a view's DOT written to weigh it (_default_views) is laid out as it is;
    # each kept gradient summarized once for all the page's texts
    with summaries_once(), start_layouts(recording, []):
        if views is None and not lazy:
            chosen = _default_views(recording, chosen, options)
        opening = default_view(recording, chosen, collapse)
        index = len(recording.steps) if step is None else step
        extra = [v for v in chosen if v not in VIEWS]
        depths = [view_collapse(v, collapse) for v in extra if v.startswith("collapsed-")]
        render_options = replay_options(recording, **options)
        theme: Theme = render_options.theme
        prefix = render_options.prefix or recording.graph.prefix
        born: dict[str, dict[str, int]] = {}
        svgs: dict[str, str] = {}
        laid = [opening] if lazy else [opening, *(v for v in chosen if v != opening)]
        # every view's Graphviz run starts now; the steps' data is written while they run
        drawn = [view_render_options({**options, "collapse": collapse}, v) for v in laid]
        with start_layouts(recording, drawn) as ready:
            data = replay_data(
                recording,
                prefix,
                None,
                depths,
                explain=explain is not False,
                fold=render_options.fold,
            )
            in_turn = [laid[position] for position in ready]  # each view once it is laid out
            for view in progress(in_turn, "gradviz: laying out views", len(recording.graph.nodes)):
                schedule = data["schedule"]
                svgs[view], born[view] = layout_view(
                    recording, view, schedule, index, collapse=collapse, **options
                )
    svgs = {view: svgs[view] for view in laid}  # the page's order, whatever the finishing one
    born = {view: born[view] for view in laid if born[view]}
    if born:
        data["schedule"]["born"] = born
    data["views"] = list(chosen)
    if extra:
        data["modules"] = _module_data(recording, prefix, extra, opening, collapse)
        _name_modules(recording, data["steps"])
        data["nav"] = _navigation(recording)
    data["search"] = _search_items(recording)
    has_forward = bool(recording.forward_ops)
    theme.check()  # again: its values go into the stylesheets as they are
    scoped = step_css(theme, SCOPE)
    plain = step_css(theme)
    if extra:
        scoped += module_css(theme, SCOPE)
        plain += module_css(theme)
    if has_forward:
        scoped += forward_css(theme, SCOPE)
        plain += forward_css(theme)
    if theme == DEFAULT:
        scoped += _dark_remap(DEFAULT, DARK) + step_css(DARK, f"{SCOPE}.gv-dark")
        if extra:
            scoped += module_css(DARK, f"{SCOPE}.gv-dark")
        if has_forward:
            scoped += forward_css(DARK, f"{SCOPE}.gv-dark")
    return {
        "svgs": svgs,
        "data": data,
        "css": {"scoped": scoped, "plain": plain},
        "step": index,
        "view": opening,
        "prefix": prefix,
        "start": opening_step(recording, born.get(opening, {})),
    }


def _default_views(
    recording: Recording, chosen: tuple[str, ...], options: dict[str, Any]
) -> tuple[str, ...]:
    """The views a page gets when none are named: all of them, but the watched combined view
    only where Graphviz ``dot`` lays it out (``beyond_dot``). Beyond that, gradviz's layered
    layout would draw it with straight edges, ResNet-50's 86,700 points wide, and it cost
    a third of that page's save and of its weight; ``views=`` still gets it."""
    if "combined" not in chosen or not beyond_dot(recording, {**options, "view": "combined"}):
        return chosen
    kept = tuple(view for view in chosen if view != "combined")
    warnings.warn(
        f"the watched combined view of this {len(recording.graph.nodes)}-node graph is more "
        "than Graphviz dot lays out quickly, so this page leaves it out (its views: "
        f"{', '.join(kept)}); save(..., views={list(chosen)!r}) adds it, laid out by "
        "gradviz's layered layout.",
        GradvizWarning,
        stacklevel=4,
    )
    return kept


def _navigation(recording: Recording) -> dict[str, Any]:
    """For stepping by module: each node's module chain (outermost first) and the modules'
    names; the front end steps over / out of the module the active node ran in."""
    forward = recording.graph.forward
    assert forward is not None
    chains = {
        node_id: [scope.index for scope in forward.module_chain(module)]
        for node_id, module in forward.node_modules.items()
    }
    used = {m for chain in chains.values() for m in chain}
    return {"chains": chains, "names": {str(m): forward.modules[m].label for m in sorted(used)}}


def _search_items(recording: Recording) -> list[list[str]]:
    """What the search box matches, per backward node: its type, its module and the names
    of the tensors drawn at it (parameters included)."""
    graph = recording.graph
    forward = graph.forward
    names: dict[str, list[str]] = {}
    for record in graph.tensors:
        if record.node_id is not None and record.name:
            names.setdefault(record.node_id, []).append(record.name)
    items = []
    for node in graph.nodes:
        words = [node.type_name, *names.get(node.id, [])]
        scope = None if forward is None else forward.module_for_node(node.id)
        if scope is not None:
            words.append(scope.label)
        items.append([node.id, " ".join(words)])
    return items


DEFAULT_COLLAPSE_DEPTH = 1  # the module view the depth control opens on, when shipped


def _module_data(
    recording: Recording, prefix: str, views: list[str], opening: str, collapse: object = None
) -> dict[str, Any]:
    """What the front end needs to expand a collapsed module: for each collapsed view, each
    box's module and the view it opens in (where the module is the cluster
    ``<prefix>_b_m<index>``: the next depth's view, then ``modules``)."""
    forward = recording.graph.forward
    assert forward is not None
    collapsed = [v for v in views if v.startswith("collapsed-")]
    clusters = [v for v in views if v == "modules"]
    opens: dict[str, dict[str, dict[str, str]]] = {}
    for position, view in enumerate(collapsed):
        later = [*collapsed[position + 1 :], *clusters]
        boxes = collapsed_members(recording.graph, view_collapse(view, collapse))
        opens[view] = {}
        for module in boxes:
            if view == AUTO_VIEW:  # boxes at mixed depths: the view one deeper than each
                deeper = f"collapsed-{len(forward.module_chain(module))}"
                target = deeper if deeper in collapsed else (clusters or ["backward"])[0]
            else:
                target = later[0] if later else "backward"
            opens[view][f"{prefix}_bm{module}"] = {
                "module": forward.modules[module].label,
                "opens": target,
                "cluster": f"{prefix}_b_m{module}",
            }
    default = None  # the collapsed view the view menu opens: the opening one, else auto
    for wanted in (opening, AUTO_VIEW, f"collapsed-{DEFAULT_COLLAPSE_DEPTH}"):
        if default is None and wanted in collapsed:
            default = wanted
    return {
        "collapsed": collapsed,
        "default": default or (collapsed[-1] if collapsed else None),
        "opens": opens,
    }


def _name_modules(recording: Recording, steps: list[dict[str, Any]]) -> None:
    """Each backward step's panel says which module it ran in (where one made its node)."""
    forward = recording.graph.forward
    assert forward is not None
    for step in steps:
        scope = forward.module_for_node(step["node"]) if step.get("node") else None
        if scope is not None:
            step["module"] = scope.label


def page_script(lazy: bool, explain: bool) -> str:
    """The front end a page inlines: the bundle (built from ``frontend/`` by esbuild, minified)
    with lazy parsing of big views and the explanations only where the page needs them."""
    kind = "-".join(["page"] + (["lazy"] if lazy else []) + (["explain"] if explain else []))
    return _script_safe_js(asset_text(f"stepper-{kind}.js"))


def compact_css(source: str) -> str:
    """The stylesheet as the page inlines it: without comments and indentation."""
    source = re.sub(r"/\*.*?\*/", "", source, flags=re.DOTALL)
    return "\n".join(line.strip() for line in source.splitlines() if line.strip()) + "\n"


def _page_data(data: dict[str, Any], svgs: dict[str, str]) -> dict[str, Any]:
    """The data as the page ships it: the steps without ``formula`` (the narration says it;
    the front end reads only the narration; the widget and ``to_dict`` keep it), and when
    each element appears said once for all views (``SHARED_BORN``)."""
    steps = [{k: v for k, v in step.items() if k != "formula"} for step in data["steps"]]
    out = {**data, "steps": steps}
    born = data["schedule"].get("born")
    if born:
        out["schedule"] = {**data["schedule"], "born": _shared_born(born, svgs)}
    return out


_ID = re.compile(r' id="([^"]+)"')
SHARED_BORN = "*"  # the page's born map for every view; each view lists only where it differs


def _shared_born(
    born: dict[str, dict[str, int]], svgs: dict[str, str]
) -> dict[str, dict[str, int]]:
    """Each element's forward frame once (most views draw the same node at the same frame:
    on ResNet-50 the backward, module and combined views repeat 2,000 of them); a view
    keeps its own entries where they differ or its SVG has no such id."""
    counts: dict[str, dict[int, int]] = {}
    for frames in born.values():
        for element, frame in frames.items():
            seen = counts.setdefault(element, {})
            seen[frame] = seen.get(frame, 0) + 1
    shared = {element: max(seen, key=seen.__getitem__) for element, seen in counts.items()}
    views = {}
    for view, frames in born.items():
        ids = set(_ID.findall(svgs.get(view, "")))
        views[view] = {e: f for e, f in frames.items() if shared[e] != f or e not in ids}
    return {SHARED_BORN: shared, **views}


def views_born(born: dict[str, dict[str, int]], svgs: dict[str, str]) -> dict[str, dict[str, int]]:
    """``_shared_born`` undone: each view gets the shared frames of the elements its SVG
    has, then its own (the front end's ``expandBorn`` does the same)."""
    shared = born.get(SHARED_BORN, {})
    out: dict[str, dict[str, int]] = {}
    for view, own in born.items():
        if view == SHARED_BORN:
            continue
        ids = _ID.findall(svgs.get(view, ""))
        out[view] = {**{e: shared[e] for e in ids if e in shared}, **own}
    return out


def _script_safe_js(source: str) -> str:
    lowered = source.lower()
    if "</script" in lowered or "<!--" in lowered:
        raise ValueError("the stepper's JS must not contain '</script' or '<!--'")
    return source


def content_security_policy(script: str, *others: str) -> str:
    """The page's policy: nothing from the network, and no script but ``script`` and
    ``others`` (by their sha256), so markup that slipped into the page could not run even if
    it got there."""
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(s.encode('utf-8')).digest()).decode('ascii')}'"
        for s in (script, *others)
    )
    return (
        "default-src 'none'; "
        f"script-src {hashes}; "
        "style-src 'unsafe-inline'; img-src data: blob:; base-uri 'none'; form-action 'none'"
    )


# Above this many backward nodes a page ships the lazy parsing of views (6 kB): its views
# parse their nodes and edges when the camera comes near them. Smaller pages parse each view
# whole (ResNet-50's combined view, 2,800 nodes and edges, in 150 ms) and stay lighter.
LAZY_NODES = 1000


COMPRESS_ABOVE = 256 * 1024  # bytes of JSON above which the page ships it gzip+7bit


def packed_state(state: dict[str, Any], compress: bool | None = None) -> tuple[str, str]:
    """The page's data script: (its attributes, its text). Big replays go gzip-compressed,
    7 bits a character (``gradviz.stepper.sevenbit``: SVG text shrinks 8-15x; the browser
    inflates it natively with DecompressionStream), small ones as plain JSON that stays
    readable in the page."""
    # no script context inside the packed bytes: plain JSON (no \u003c escapes) is enough
    plain = json_text(state, compact=True)
    if compress is None:  # the escapes only lengthen it: plain JSON over the limit is over
        compress = len(plain) > COMPRESS_ABOVE or len(json_for_script(state)) > COMPRESS_ABOVE
    if not compress:
        return 'type="application/json" class="gv-replay-data"', json_for_script(state)
    return _PACKED, to_seven_bit(gzip.compress(plain.encode("utf-8"), 9, mtime=0))


_DATA_SCRIPT = re.compile(
    r'<script type="[^"]+" class="gv-replay-data"([^>]*)>(.*?)</script>', re.DOTALL
)


def unpack_state(page: str) -> dict[str, Any]:
    """The state a replay page holds, compressed or not (for tests and tools)."""
    match = _DATA_SCRIPT.search(page)
    if match is None:
        raise ValueError("not a gradviz replay page: no gv-replay-data script")
    text = match.group(2)
    if "gzip+7bit" in match.group(1):
        text = gzip.decompress(from_seven_bit(text)).decode("utf-8")
    value: dict[str, Any] = json.loads(text)
    schedule = value.get("data", {}).get("schedule", {})
    if SHARED_BORN in schedule.get("born", {}):
        schedule["born"] = views_born(schedule["born"], value["svgs"])
    return value


# The page weight a replay keeps to, every view included: the explanations' toggles (memory,
# gradient health) ship by default only where they keep a page under it.
PAGE_BYTES_PER_NODE = 1500


def replay_html(
    recording: Recording,
    title: str | None = None,
    views: Sequence[str] | None = None,
    compress: bool | None = None,
    extra_data: dict[str, Any] | None = None,
    after: str = "",
    explain: bool | None = None,
    **options: Any,
) -> str:
    """One self-contained page: the stepper's JS, CSS, the views' SVGs and the data inline.

    ``views`` leaves views out (``available_views``); ``compress`` ships the data
    gzip+7bit (default: when it is big). ``extra_data`` joins the stepper's data (a
    diff's per-node numbers); ``after``: trusted, already escaped markup after the stepper.
    ``explain``: the Memory and Health toggles (default: unless they alone would take the
    page over ``PAGE_BYTES_PER_NODE`` bytes per backward node; ``True``: always)."""
    payload = stepper_payload(recording, views=views, explain=explain, **options)
    payload["data"].update(extra_data or {})
    budget = PAGE_BYTES_PER_NODE * max(len(recording.graph.nodes), 1)
    toggles = {k: payload["data"][k] for k in replay_overlay_keys() if k in payload["data"]}
    if explain is not None or not toggles:
        return _page(recording, payload, title, compress, after)
    lighter = {**payload, "data": {k: v for k, v in payload["data"].items() if k not in toggles}}
    plain = json_text(_page_state(recording, lighter), compact=True)
    heavy: Packed | None = None  # a small page: packing it twice costs little
    light: Packed | None = None
    packed = compress is True or (compress is None and len(plain) > COMPRESS_ABOVE)
    if packed:  # first the quicker packing; the tightest only where the weight needs it
        heavy, light = _packed_with_and_without(plain, toggles, QUICK_LEVEL)
    page = _page(recording, payload, title, compress, after, heavy)
    if len(page.encode("utf-8")) <= budget:
        return page
    if packed:
        heavy, light = _packed_with_and_without(plain, toggles, TIGHT_LEVEL)
        page = _page(recording, payload, title, compress, after, heavy)
        if len(page.encode("utf-8")) <= budget:
            return page
    lighter_page = _page(recording, lighter, title, compress, after, light)
    return lighter_page if len(lighter_page.encode("utf-8")) <= budget else page


Packed = tuple[str, str]  # a page's data script: its attributes and its text
_PACKED = 'type="application/octet-stream" class="gv-replay-data" data-encoding="gzip+7bit"'


# zlib levels of a big page's data: QUICK_LEVEL first (the 6-layer TransformerEncoder's data,
# 1.8 MB of JSON: 36 ms and 255 kB against 69 ms and 248 kB at 9), TIGHT_LEVEL where the
# quick one leaves the page over its weight budget (ResNet-50 with every view, 1.49 MB per
# 1,000 nodes at 9).
QUICK_LEVEL = 6
TIGHT_LEVEL = 9


def _packed_with_and_without(
    plain: str, toggles: dict[str, Any], level: int = TIGHT_LEVEL
) -> tuple[Packed, Packed]:
    """A big page's data packed with the toggles' data and without it, the shared part
    compressed once: ``plain`` (the state without the toggles, its data last) and the
    toggles' JSON spliced in before its last two braces give the same JSON as the whole
    state, and the compressor's state after the shared part is copied for the two endings.
    Measured on the watched ResNet-50: its page packed twice took 0.24 s of zlib, once
    0.12 s."""
    if not plain.endswith("}}"):
        raise AssertionError("the page state must end with its data object")
    shared = plain[:-2]
    tail = json_text(toggles, compact=True)[1:-1]
    packer = zlib.compressobj(level, zlib.DEFLATED, 31)  # 31: a gzip stream (header, CRC)
    head = packer.compress(shared.encode("utf-8"))
    other = packer.copy()
    heavy = head + packer.compress(f",{tail}}}}}".encode()) + packer.flush()
    light = head + other.compress(b"}}") + other.flush()
    return (_PACKED, to_seven_bit(heavy)), (_PACKED, to_seven_bit(light))


def _page_state(recording: Recording, payload: dict[str, Any]) -> dict[str, Any]:
    """What the page's data script holds (its data last: ``_packed_with_and_without``)."""
    state = {key: payload[key] for key in ("svgs", "css", "view")}
    state["step"] = payload["start"]  # the seed, or the first forward op (opening_step)
    state["data"] = _page_data(payload["data"], payload["svgs"])
    return state


def _page(
    recording: Recording,
    payload: dict[str, Any],
    title: str | None,
    compress: bool | None,
    after: str,
    packed: Packed | None = None,
) -> str:
    """The page around a payload (``replay_html`` builds it again without the toggles'
    data when they make it too heavy; the layout is not redone); ``packed``: its data
    script already packed."""
    if packed is None:
        packed = packed_state(_page_state(recording, payload), compress)
    attributes, text = packed
    css = compact_css(asset_text("stepper.css"))
    lazy = len(recording.graph.nodes) > LAZY_NODES  # big views parse lazily
    explain = explained(payload["data"])
    if explain:
        css += compact_css(asset_text("explain.css"))
    script = f"\n{page_script(lazy, explain)}\n"
    steps = f"{len(recording.steps)} steps"
    if recording.forward_ops:
        steps = f"{len(recording.forward_ops)} forward ops, then {steps}"
    name = title or f"gradviz replay: {steps}"
    fallback = "<p>This replay needs JavaScript"
    if "gzip" in attributes or "backward" not in payload["svgs"]:
        fallback += " (a browser from 2023 or later).</p>"  # no second copy of a big graph
    else:
        fallback += "; the final step:</p>" + static_svg(payload)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="color-scheme" content="light dark">\n'
        '<meta http-equiv="Content-Security-Policy" '
        f'content="{content_security_policy(script, CHECK_SCRIPT)}">\n'
        f"<title>{html.escape(name)}</title>\n"
        f"<style>body{{margin:12px;background:Canvas;color:CanvasText}}\n{css}</style>\n"
        "</head>\n<body>\n"
        f'<h1 style="font:600 16px sans-serif">{html.escape(name)}</h1>\n'
        f"{_note_html(recording)}"
        f'<script class="gv-damaged-check">{CHECK_SCRIPT}</script>\n'
        f"<script {attributes}>{text}</script>\n"
        f"<noscript>{fallback}</noscript>\n"
        f'<script type="module">{script}</script>\n'
        f"{after}"
        f"{END_MARKER}"
        "</body>\n</html>\n"
    )


def _note_html(recording: Recording) -> str:
    """The recording's page note (``Recording.page_note``) as a line of its own, or nothing."""
    note = recording.page_note
    if not note:
        return ""
    return f'<p class="gv-page-note" style="font:13px sans-serif">{html.escape(note)}</p>\n'


def static_svg(payload: dict[str, Any]) -> str:
    """The payload's backward view as laid out (its step's classes), stylesheet inside."""
    svg = str(payload["svgs"]["backward"])
    end = svg.index(">") + 1
    return svg[:end] + f"<style>{payload['css']['plain']}</style>" + svg[end:]


def static_html(recording: Recording, **options: Any) -> str:
    """The notebook's fallback where widgets do not run: the final step, no script."""
    options.pop("views", None)
    payload = stepper_payload(recording, views=["backward"], **options)
    caption = html.escape(
        f"gradviz: backward pass, {len(recording.steps)} steps (final step shown; "
        "run the notebook to step through it)"
    )
    return (
        f'<div class="gv-static"><div>{static_svg(payload)}</div>'
        f'<div style="font:12px sans-serif;opacity:.7">{caption}</div>{_note_html(recording)}</div>'
    )
