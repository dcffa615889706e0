"""The film strip's layout and replays: the backward graph it recolours is the one PyTorch
ran (a recording of that step has the same ids), every norm it paints is PyTorch's own
(``torch.linalg.vector_norm`` of ``.grad``, read by hand in a plain loop), each recorded
step's replay is written beside the strip through the export layer, and the widget carries
the same data."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import gradviz
from gradviz.errors import GraphvizNotFound
from gradviz.model.training import owner_of
from gradviz.stepper import filmlayout
from gradviz.stepper.filmlayout import BINS, colour_class
from gradviz.stepper.filmstrip import filmstrip_data, filmstrip_html
from tests.support.full_disk import fill_disk

needs_dot = pytest.mark.needs_dot


def diverging(keep: tuple[int, ...] = (), steps: int = 12) -> tuple[Any, list[list[float]]]:
    """A net trained with too high a learning rate, and the ``p.grad`` norms a plain loop
    reads at each step (the numbers the strip must paint)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 1))
    x, y = torch.randn(64, 4), torch.randn(64, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1.2)
    seen: list[list[float]] = []
    with gradviz.watch_training(model, opt, keep_steps=keep) as run:
        for _ in range(steps):
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            seen.append([float(torch.linalg.vector_norm(p.grad)) for p in model.parameters()])  # type: ignore[arg-type]
            opt.step()
    return run, seen


def same(a: float | None, b: float | None) -> bool:
    """Equal, NaN equal to NaN."""
    if a is None or b is None:
        return a is b
    return a == b or (math.isnan(a) and math.isnan(b))


def number(value: Any) -> float | None:
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(value, value)


def test_the_layout_is_the_graph_pytorch_ran_as_plain_data() -> None:
    run, _ = diverging(keep=(2,))
    assert run.graph is not None
    assert all(node.torch_node is None for node in run.graph.nodes)
    recorded = run.recording(2).graph
    assert [(n.id, n.type_name) for n in run.graph.nodes] == [
        (n.id, n.type_name) for n in recorded.nodes
    ]
    assert [e.key for e in run.graph.edges] == [e.key for e in recorded.edges]
    named = {t.name: t.node_id for t in run.graph.tensors if t.name}
    assert named == {t.name: t.node_id for t in recorded.tensors if t.name}
    assert set(named) == set(run.params)


def test_every_painted_norm_is_pytorchs_own() -> None:
    run, seen = diverging()
    assert run.first_nonfinite() is not None  # NaN and Inf are painted too
    data = filmstrip_data(run)
    names = [p["name"] for p in data["params"]]
    assert names == run.params == ["0.weight", "0.bias", "2.weight", "2.bias"]
    for i, param in enumerate(data["params"]):
        painted = [number(v) for v in param["norms"]]
        assert all(same(a, row[i]) for a, row in zip(painted, seen, strict=True))
    by_module = {m["name"]: [number(v) for v in m["norms"]] for m in data["modules"]}
    for module in ("0", "2"):
        owned = [i for i, name in enumerate(run.params) if owner_of(name) == module]
        for painted, row in zip(by_module[module], seen, strict=True):
            expected = math.sqrt(math.fsum(row[i] ** 2 for i in owned))
            assert same(painted, expected) or painted == pytest.approx(expected, rel=1e-12)


@needs_dot
def test_the_drawing_shows_no_value_of_one_step_on_every_step() -> None:
    run, _ = diverging()
    svg = filmlayout.layout_data(run, run.modules)["svg"]
    texts = [t.replace("&#45;", "-") for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]
    step0_loss = run.losses[0]
    assert run.has_loss[0] and step0_loss != run.losses[1]
    shown = " ".join(texts)
    assert f"{step0_loss:.4g}" not in shown
    assert not any(word in shown for word in ("min ", "max ", "mean "))
    assert "32×4 float32" in texts  # the shapes stay


def test_the_paint_map_puts_each_norm_on_its_own_elements() -> None:
    run, _ = diverging()
    graph = run.graph
    paint = filmlayout.paint_map(graph, list(run.params), run.modules)
    for tensor in graph.tensors:
        if tensor.name in run.params:
            index = run.params.index(tensor.name)
            assert paint[tensor.id] == ["p", index] == paint[tensor.node_id]  # type: ignore[index]
    # the Addmm nodes hand each Linear its gradients; the loss's nodes belong to no module
    by_type: dict[str, list[Any]] = {}
    for node in graph.nodes:
        by_type.setdefault(node.type_name, []).append(paint.get(node.id))
    assert sorted(by_type["AddmmBackward0"]) == [["m", 0], ["m", 1]]
    assert sorted(by_type["TBackward0"]) == [["m", 0], ["m", 1]]
    assert by_type["MeanBackward0"] == by_type["PowBackward0"] == [None]
    assert by_type["ReluBackward0"] == [None]


def test_the_colour_scale_is_log_between_the_bands() -> None:
    low, high = 1e-6, 1e3
    step = (math.log10(high) - math.log10(low)) / BINS
    for k in range(BINS):
        inside = 10 ** (math.log10(low) + (k + 0.5) * step)
        assert colour_class(inside, low, high) == f"gv-c{k}"
    assert colour_class(high, low, high) == f"gv-c{BINS - 1}"
    assert colour_class(low, low, high) == "gv-c0"
    assert colour_class(low / 2, low, high) == colour_class(0.0, low, high) == "gv-c-low"
    assert colour_class(high * 2, low, high) == "gv-c-high"
    assert colour_class(math.nan, low, high) == colour_class(math.inf, low, high) == "gv-c-bad"
    assert colour_class(None, low, high) == "gv-c-none"


def test_the_js_scale_is_the_same(tmp_path: Path) -> None:
    """The front end's colourClass against colour_class, through node."""
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    values = [0.0, 3e-7, 1e-6, 2e-6, 5e-5, 0.01, 0.3, 1.0, 7.0, 999.0, 1e3, 2e3]
    script = tmp_path / "scale.mjs"
    source = Path("frontend/src/filmstrip.js").resolve().as_uri()
    script.write_text(
        f'import {{ colourClass }} from "{source}";\n'
        f"console.log(JSON.stringify({json.dumps(values)}.map("
        f"(v) => colourClass(v, 1e-6, 1e3, {BINS}))));\n",
        encoding="utf-8",
    )
    out = subprocess.run([node, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [colour_class(v, 1e-6, 1e3) for v in values]


def test_the_strip_page_runs_only_its_own_script() -> None:
    run, _ = diverging()
    page = filmstrip_html(run, title='<script>alert("x")</script>')
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy is not None
    assert "default-src 'none'" in policy.group(1)
    scripts = re.findall(r"<script>(.*?)</script>", page, flags=re.S)
    assert len(scripts) == 1  # the title's markup is text, not a script
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    assert re.findall(r"'sha256-([^']+)'", policy.group(1)) == [digest]


@needs_dot
def test_save_writes_each_kept_steps_replay_beside_the_strip(tmp_path: Path) -> None:
    run, _ = diverging(keep=(1, 3))
    page = run.save(tmp_path / "strip.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "strip-step1.html",
        "strip-step3.html",
        "strip.html",
    ]
    text = page.read_text(encoding="utf-8")
    payload = re.search(r'class="gv-strip-data">(.*?)</script>', text, re.S)
    assert payload is not None
    data = json.loads(payload.group(1))
    assert data["replays"] == {"1": "strip-step1.html", "3": "strip-step3.html"}
    assert data["layout"]["svg"].startswith("<svg") and data["layout"]["paint"]
    replay = (tmp_path / "strip-step3.html").read_text(encoding="utf-8")
    assert "training step 3" in replay and "gv-stepper" in replay
    assert '<a class="gv-back" href="strip.html">' in replay  # back to the strip


def test_a_full_disk_leaves_no_strip_linking_a_missing_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, _ = diverging(keep=(1,))
    folder = tmp_path / "out"
    folder.mkdir()
    fill_disk(monkeypatch, folder)
    with pytest.raises(OSError):
        run.save(folder / "strip.html")
    assert list(folder.iterdir()) == []


def test_without_graphviz_the_strip_says_why_it_has_no_layout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def missing(*_: object, **__: object) -> str:
        raise GraphvizNotFound("Graphviz's dot is not installed")

    monkeypatch.setattr(filmlayout, "graph_svg", missing)
    run, _ = diverging(steps=2)
    layout = filmstrip_data(run)["layout"]
    assert layout["svg"] is None and "dot is not installed" in layout["note"]
    assert "gv-strip-data" in run.html()


@needs_dot
def test_the_widget_carries_the_strip_and_the_kept_replays() -> None:
    pytest.importorskip("anywidget")
    from gradviz.stepper.filmwidget import FilmStrip

    run, _ = diverging(keep=(2,))
    widget = run.widget()
    assert isinstance(widget, FilmStrip)
    assert widget.data["steps"] == list(run.steps) and widget.step == 0
    assert widget.data["replays"] == {"2": "#replay-2"}
    assert sorted(widget.replays) == ["2"] and "training step 2" in widget.replays["2"]
    assert widget.data["params"][0]["norms"][-1] == "NaN"  # strict JSON on the wire
    assert not run.widget(replays=False).replays
    bundle = run._repr_mimebundle_()
    assert isinstance(bundle, tuple)
    assert "application/vnd.jupyter.widget-view+json" in bundle[0]
    assert "first non-finite: step" in bundle[0]["text/plain"]
    with pytest.raises(gradviz.InvalidArgument, match="TrainingRun"):
        FilmStrip(run.recording(2))  # type: ignore[arg-type]
