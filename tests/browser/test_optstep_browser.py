"""The optimizer step's panel in Chromium: after the last backward step, what
``optimizer.step()`` did to each parameter, checked against norms recomputed here from the
tensors; the parameters' leaf boxes marked there only. Screenshots go to ``tmp_path``."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

import gradviz
from gradviz import GradvizWarning
from gradviz.model.summarize import summarize
from gradviz.stepper.page import unpack_state
from tests.support.browser import open_local
from tests.support.person import click, focus_on, move_slider_to
from tests.support.workloads import GPT

pytestmark = [pytest.mark.browser, pytest.mark.needs_dot]

PAGE_BYTES_PER_1000_NODES = 1.5e6  # as tests/browser/test_big_pages_browser.py

ROWS = """(root) => [...root.querySelectorAll('.gv-optstep .gv-opt-item')].map((item) => {
  const v = (cls, key) => { const e = item.querySelector(`.${cls} .gv-value`);
    return e && e.dataset[key] !== '' ? Number(e.dataset[key]) : null; };
  return { name: item.dataset.param, w: v('gv-opt-w', 'w'), after: v('gv-opt-w', 'after'),
    dw: v('gv-opt-dw', 'dw'), ratio: v('gv-opt-ratio', 'ratio'), g: v('gv-opt-g', 'g'),
    state: item.querySelector('.gv-opt-before .gv-value').textContent,
    text: item.querySelector('.gv-opt-w .gv-value').textContent };
})"""


def norm(tensor: torch.Tensor) -> float:
    return float(torch.linalg.vector_norm(tensor.detach().double()))


def close(shown: float | None, value: float) -> bool:
    return shown is not None and math.isclose(shown, value, rel_tol=1e-3, abs_tol=1e-12)


def test_the_optimizer_panel_shows_each_parameters_step(browser: Any, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    data = torch.randn(6, 3)
    for _ in range(2):
        optimizer.zero_grad()
        momentum = {p: optimizer.state[p].get("momentum_buffer") for p in model.parameters()}
        momentum = {p: None if b is None else b.clone() for p, b in momentum.items()}
        before = {n: p.detach().clone() for n, p in model.named_parameters()}
        step = gradviz.record_step(optimizer, model(data).pow(2).mean(), params=model)
    path = step.save(tmp_path / "step.html")
    last = len(step.recording.steps)
    page, requests, errors = open_local(browser, path)
    page.wait_for_selector(".gv-stepper")
    assert all(url.startswith(("file:", "data:", "blob:")) for url in requests)
    root = page.query_selector(".gv-stepper")
    assert not root.query_selector(".gv-optstep")  # the page opens on the seed
    focus_on(page, root, "its stage")
    page.keyboard.press("s")  # the key goes to the step after the backward
    assert root.get_attribute("data-step") == str(last)
    shown = {row["name"]: row for row in root.evaluate(ROWS)}
    assert set(shown) == {n for n, _ in model.named_parameters()}
    for name, param in model.named_parameters():
        row = shown[name]
        update = param.detach() - before[name]
        assert close(row["w"], norm(before[name])), name
        assert close(row["after"], norm(param)), name
        assert close(row["dw"], norm(update)), name
        assert close(row["ratio"], norm(update) / norm(before[name])), name
        assert close(row["g"], norm(param.grad)), name  # type: ignore[arg-type]
        assert "→" in row["text"]
        buffer = momentum[param]  # the first step's buffer, which the second one used
        assert buffer is not None
        assert row["state"] == f"momentum_buffer {summarize(buffer).text(48)}"
    hyper = root.query_selector(".gv-opt-hyper .gv-value").text_content()
    assert "lr=0.1" in hyper and "momentum=0.9" in hyper
    assert "buf ← μ·buf + g" in root.query_selector(".gv-opt-rule").text_content()
    leaves = {
        f"{step.recording.graph.prefix}_{t.id}"
        for t in step.recording.graph.tensors
        if t.role.value == "leaf" and t.name in shown
    }
    marked = set(root.evaluate("(r) => [...r.querySelectorAll('.gv-opt-param')].map(e => e.id)"))
    assert marked == leaves and len(marked) == 4
    page.screenshot(path=str(tmp_path / "optimizer-step.png"), full_page=True)
    move_slider_to(page, root, last - 1)  # one step back: the backward again
    assert not root.query_selector(".gv-optstep")
    assert not root.query_selector(".gv-opt-param")
    click(page, root.query_selector(".gv-opt-btn"))  # the button does what the key does
    assert root.get_attribute("data-step") == str(last)
    assert root.query_selector(".gv-optstep .gv-opt-item")
    assert errors == []


@pytest.mark.slow
def test_a_gpt_step_page_stays_light_and_shows_adamw(browser: Any, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = GPT(vocab=64, d_model=32, layers=4, seq=8)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, 64, (1, 8), generator=torch.Generator().manual_seed(0))
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    step = gradviz.record_step(optimizer, model(ids).square().mean(), params=model)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "this view has", GradvizWarning)
        path = step.save(tmp_path / "gpt-step.html")
    nodes = len(step.recording.graph.nodes)
    size = path.stat().st_size
    extra = len(str(unpack_state(path.read_text(encoding="utf-8"))["data"]["optimizer"]))
    print(f"\n[gpt step page] {nodes} nodes, {size / 1e3:.0f} kB, optimizer data {extra} B")
    assert size <= PAGE_BYTES_PER_1000_NODES * nodes / 1000
    page, _, errors = open_local(browser, path)
    page.set_viewport_size({"width": 1600, "height": 900})
    page.wait_for_selector(".gv-stepper svg")
    root = page.query_selector(".gv-stepper")
    click(page, root.query_selector(".gv-opt-btn"))
    page.wait_for_selector(".gv-optstep")
    shown = {row["name"]: row for row in root.evaluate(ROWS)}
    assert set(shown) == {n for n, _ in model.named_parameters()}
    for name, param in model.named_parameters():
        update = param.detach() - before[name]
        assert close(shown[name]["after"], norm(param)), name
        assert close(shown[name]["dw"], norm(update)), name
        assert shown[name]["state"] == "none yet (first step)"  # AdamW's first step
    page.screenshot(path=str(tmp_path / "gpt-step.png"))
    assert errors == []
