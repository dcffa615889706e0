"""The stepper's explanations in Chromium: the memory and gradient-health toggles and
the steppable diff page, each checked against values computed here from PyTorch itself.

Each test also takes a screenshot (``tmp_path``) of the toggled view, as a user sees it.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

import gradviz
from gradviz.stepper.page import unpack_state
from tests.support.browser import open_local
from tests.support.person import focus_on, move_slider_to
from tests.support.saved import saved_storages

pytestmark = [pytest.mark.browser, pytest.mark.needs_dot]

BYTES = """(root, cls) => { const v = root.querySelector(`.${cls} .gv-value`);
  return v ? Number(v.dataset.bytes) : null; }"""


def opened(browser: Any, path: Path) -> tuple[Any, Any, list[str]]:
    page, requests, errors = open_local(browser, path)
    page.wait_for_selector(".gv-stepper")
    assert all(url.startswith(("file:", "data:", "blob:")) for url in requests)
    return page, page.query_selector(".gv-stepper"), errors


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))


def test_memory_toggle_shows_saved_bytes_freed_as_backward_passes(
    browser: Any, tmp_path: Path
) -> None:
    model = mlp()
    x = torch.randn(5, 4)
    loss = model(x).tanh().square().sum()
    held = sum(saved_storages(loss.grad_fn).values())  # before backward frees anything
    rec = gradviz.record(loss, params=model)
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()  # torch agrees: the saved tensors are gone
    path = rec.save(tmp_path / "memory.html")
    page, root, errors = opened(browser, path)
    assert not page.query_selector(".gv-memory")  # off until toggled
    page.keyboard.press("m")
    assert root.eval_on_selector(".gv-memory-btn", "b => b.getAttribute('aria-pressed')") == "true"
    assert root.evaluate(BYTES, "gv-mem-saved") == held
    badges = root.query_selector_all(".gv-mem-badge")
    assert len(badges) == len(rec.memory().node_bytes) > 0
    assert not root.query_selector_all(".gv-mem-freed")  # the seed: nothing freed yet
    timeline = rec.memory()
    for step in timeline.steps:
        move_slider_to(page, root, step.index)
        assert root.evaluate(BYTES, "gv-mem-saved") == step.saved
        assert root.evaluate(BYTES, "gv-mem-total") == step.total
        assert root.evaluate(BYTES, "gv-mem-peak") == timeline.peak
    assert root.evaluate(BYTES, "gv-mem-saved") == 0  # all freed at the end
    assert len(root.query_selector_all(".gv-mem-freed")) == len(badges)
    note = root.eval_on_selector(".gv-mem-note", "e => e.textContent")
    assert "second time" in note and "retain_graph=True" in note
    page.screenshot(path=str(tmp_path / "memory.png"))
    focus_on(page, root, "its stage")  # the keys go to the stepper again, not the slider
    page.keyboard.press("m")  # off again: the panel has no memory section
    assert not page.query_selector(".gv-memory")
    assert not errors


def test_memory_with_retain_graph_keeps_everything(browser: Any, tmp_path: Path) -> None:
    model = mlp()
    loss = model(torch.randn(3, 4)).square().sum()
    held = sum(saved_storages(loss.grad_fn).values())
    rec = gradviz.record(loss, params=model, retain_graph=True)
    loss.backward()  # torch agrees: it can run again
    page, root, errors = opened(browser, rec.save(tmp_path / "kept.html"))
    page.keyboard.press("m")
    page.keyboard.press("End")
    assert root.evaluate(BYTES, "gv-mem-saved") == held
    assert not root.query_selector_all(".gv-mem-freed")
    assert "can run over it again" in root.eval_on_selector(".gv-mem-note", "e => e.textContent")
    assert not errors


def leaf_edge(rec: gradviz.Recording, name: str) -> tuple[str, str]:
    """The element id of the edge into the AccumulateGrad of parameter ``name``, and that
    node's id."""
    (record,) = [t for t in rec.graph.tensors if t.name == name]
    assert record.node_id is not None
    (edge,) = rec.graph.in_edges(record.node_id)
    return f"{rec.graph.prefix}_e_{edge.src}_{edge.slot}", record.node_id


def test_the_health_strip_says_how_to_get_rows_when_no_leaf_is_named(
    browser: Any, tmp_path: Path
) -> None:
    w = torch.randn(3, requires_grad=True)
    unnamed = gradviz.record((w * 2).tanh().sum())
    page, root, errors = opened(browser, unnamed.save(tmp_path / "unnamed.html"))
    page.keyboard.press("h")
    assert not root.query_selector_all(".gv-health-row")
    assert "params=model" in root.query_selector(".gv-health-none").text_content()
    named = gradviz.record((w * 2).tanh().sum(), names={"w": w})
    page, root, errors = opened(browser, named.save(tmp_path / "named.html"))
    page.keyboard.press("h")
    assert root.eval_on_selector_all(".gv-health-row", "rs => rs.map(r => r.dataset.module)") == [
        "w"
    ]
    assert not root.query_selector(".gv-health-none") and not errors


def test_health_toggle_draws_edges_by_norm_and_follows_modules(
    browser: Any, tmp_path: Path
) -> None:
    model = mlp()
    x = torch.randn(5, 4)
    loss = (model(x) * 1e-9).sum()  # every gradient below 1e-6: vanishing
    names = [name for name, _ in model.named_parameters()]
    values = torch.autograd.grad(loss, list(model.parameters()), retain_graph=True)
    grads = dict(zip(names, values, strict=True))
    rec = gradviz.record(loss, params=model)
    page, root, errors = opened(browser, rec.save(tmp_path / "health.html"))
    assert page.eval_on_selector(".gv-health-strip", "e => e.hidden")
    page.keyboard.press("h")
    assert not page.eval_on_selector(".gv-health-strip", "e => e.hidden")
    assert not root.query_selector_all("svg [data-log10]")  # the seed: nothing flowed yet
    edge_id, node_id = leaf_edge(rec, "0.weight")
    ran = unpack_state(Path(tmp_path / "health.html").read_text())["data"]["schedule"]["nodes"]
    step = ran[f"{rec.graph.prefix}_{node_id}"]
    move_slider_to(page, root, step)
    edge = root.query_selector(f"[id='{edge_id}']")
    expected = math.log10(float(torch.linalg.vector_norm(grads["0.weight"])))
    assert float(edge.get_attribute("data-log10")) == pytest.approx(expected, abs=0.006)
    assert "gv-h-vanishing" in edge.get_attribute("class")
    row = root.query_selector(".gv-health-row[data-module='0']")
    assert "gv-h-active" in row.get_attribute("class")  # its weight's gradient arrives now
    focus_on(page, root, "its stage")  # the keys go to the stepper again, not the slider
    page.keyboard.press("End")
    for module in ("0", "2"):
        squares = [float(grads[f"{module}.{p}"].square().sum()) for p in ("weight", "bias")]
        value = f".gv-health-row[data-module='{module}'] .gv-health-value"
        shown = root.eval_on_selector(value, "e => Number(e.dataset.norm)")
        norm = math.sqrt(sum(squares))
        assert shown == pytest.approx(norm, rel=1e-3)
    bars = root.eval_on_selector_all(".gv-health-bar", "bs => bs.map(b => b.className)")
    assert all("gv-h-vanishing" in b for b in bars)
    page.screenshot(path=str(tmp_path / "health.png"))
    page.keyboard.press("h")  # off: the edges lose their widths
    assert not root.query_selector_all("svg [data-log10]")
    assert not errors


def test_diff_page_steps_and_jumps_to_the_first_difference(browser: Any, tmp_path: Path) -> None:
    model = mlp()
    x = torch.randn(5, 4)
    y_a = model(x)
    loss_a = y_a.square().sum()
    z_b = model(x) * 3  # B has one node more: the MulBackward0
    loss_b = z_b.square().sum()
    (sent_a,) = torch.autograd.grad(loss_a, y_a, retain_graph=True)  # what PowBackward0 sends
    (sent_b,) = torch.autograd.grad(loss_b, z_b, retain_graph=True)
    a = gradviz.record(loss_a, params=model)
    b = gradviz.record(loss_b, params=model)
    diff = a.diff(b)
    path = diff.save(tmp_path / "diff.html", title="<A> vs B")
    text = path.read_text()
    assert "&lt;A&gt; vs B" in text and "<A>" not in text and 'class="gv-diff-table"' in text
    page, root, errors = opened(browser, path)
    (only_b,) = diff.only_b
    marked = root.eval_on_selector_all(".gv-only-b", "es => es.map(e => e.id)")
    assert marked == [f"{diff.union.prefix}_b_{only_b}"]
    page.keyboard.press("d")
    first = diff.first_difference
    assert first is not None and first.type_name == "PowBackward0"
    assert root.evaluate("r => Number(r.dataset.step)") == first.step_a
    ratio = float(torch.linalg.vector_norm(sent_b) / torch.linalg.vector_norm(sent_a))
    shown = root.eval_on_selector(".gv-diff-ratio .gv-value", "e => Number(e.textContent)")
    assert shown == pytest.approx(ratio, rel=1e-3)
    assert root.query_selector(".gv-diff-first")
    page.screenshot(path=str(tmp_path / "diff.png"))
    page.keyboard.press("Home")  # the seed: not a difference yet
    assert not root.query_selector(".gv-diff-first")
    assert not errors


@pytest.mark.slow
def test_on_a_watched_gpt(browser: Any, tmp_path: Path) -> None:
    """A 4-layer GPT page with the explanations: the toggles run, the peak is the timeline's."""
    from tests.support.workloads import GPT

    torch.manual_seed(0)
    model = GPT(layers=4)
    ids = torch.randint(0, 512, (1, 32))
    with gradviz.watch(model) as w:
        loss = model(ids).logsumexp(-1).mean()
    rec = w.record(loss)
    with warnings.catch_warnings():  # a cheaper dot setting for a big view, said once
        warnings.filterwarnings("ignore", "this view has", gradviz.GradvizWarning)
        path = rec.save(tmp_path / "gpt.html", explain=True)
    page, root, errors = opened(browser, path)
    page.keyboard.press("m")
    page.keyboard.press("h")
    page.keyboard.press("End")
    assert root.evaluate(BYTES, "gv-mem-peak") == rec.memory().peak
    modules = {m.module for m in rec.health().modules}
    rows = root.eval_on_selector_all(".gv-health-row", "rs => rs.map(r => r.dataset.module)")
    assert set(rows) == {m or "(top level)" for m in modules}
    # the strip marks the module the active node runs in (its panel says which)
    state = unpack_state(path.read_text())
    step = next(
        i for i, s in enumerate(state["data"]["steps"]) if "self_attn" in s.get("module", "")
    )
    move_slider_to(page, root, step)
    module = state["data"]["steps"][step]["module"].split(" (")[0]
    here = root.eval_on_selector_all(".gv-h-here", "rs => rs.map(r => r.dataset.module)")
    assert here and all(m.startswith(module) or module.startswith(m) for m in here)
    page.screenshot(path=str(tmp_path / "gpt.png"))
    assert not errors
