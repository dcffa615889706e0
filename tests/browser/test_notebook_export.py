"""A notebook exported to HTML (nbconvert, no network) shows the final step as a static
picture where the stepper widget cannot run, with and without saved widget state."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
nbconvert = pytest.importorskip("nbconvert")

pytestmark = [pytest.mark.slow, pytest.mark.needs_dot]

CELL = """import torch, gradviz
a = torch.tensor(2.0, requires_grad=True)
b = torch.tensor(3.0)
c = a * b
recording = gradviz.record(c, names={"a": a, "b": b, "c": c})
recording"""


@pytest.fixture(scope="module")
def executed(kernel_name: str) -> object:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL)])
    client = nbclient.NotebookClient(notebook, timeout=180, kernel_name=kernel_name)
    client.execute()  # stores the widget state in the notebook's metadata, as Lab can
    return notebook


def _exported(notebook: object) -> str:
    body, _ = nbconvert.HTMLExporter().from_notebook_node(notebook)
    return str(body)


def _static_pictures(page: str) -> list[str]:
    return re.findall(
        r'<div class="gv-static"[^>]*>(?:(?!</div>).)*?<div class="gv-picture"><div><svg',
        page,
        re.S,
    )


def test_the_export_of_a_notebook_saved_with_widget_state_shows_the_final_step(
    executed: object,
) -> None:
    assert "widgets" in executed.metadata  # type: ignore[attr-defined]
    page = _exported(executed)
    assert len(_static_pictures(page)) == 1
    assert "final step shown" in page


def test_the_export_without_widget_state_shows_it_once_too(executed: object) -> None:
    copy = nbformat.from_dict(executed)
    copy.metadata.pop("widgets", None)
    page = _exported(copy)
    assert len(_static_pictures(page)) == 1


def test_the_static_picture_is_marked_for_the_live_widget_to_hide(executed: object) -> None:
    outputs = executed.cells[0].outputs  # type: ignore[attr-defined]
    fallback = [o for o in outputs if "text/html" in o.get("data", {})]
    widget = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o["data"]]
    assert len(fallback) == 1 and len(widget) == 1
    assert outputs.index(fallback[0]) < outputs.index(widget[0])
    model_id = widget[0]["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
    assert f'data-gv-fallback="gv-{model_id}"' in fallback[0]["data"]["text/html"]


@pytest.mark.browser
def test_the_live_widget_hides_only_its_own_static_picture(tmp_path: Path) -> None:
    """The widget's anywidget entry point, run in Chromium with a stand-in model."""
    import json

    import torch

    import gradviz
    from gradviz.stepper.page import asset_text, stepper_payload
    from tests.support.browser import chromium, open_local

    A = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    recording = gradviz.record((A * 1).mean(), names={"A": A})
    payload = stepper_payload(recording)
    state = {**payload, "step": len(recording), "view": "backward", "fallback": "gv-mine"}
    module = asset_text("stepper-widget.js")
    state_json = json.dumps({"state": state, "esm": module}).replace("</", "<\\/")
    page_text = f"""<!doctype html><meta charset="utf-8"><body>
<div class="gv-static" data-gv-fallback="gv-mine">mine</div>
<div class="gv-static" data-gv-fallback="gv-other">other</div>
<div id="el"></div>
<script type="application/json" id="state">{state_json}</script>
<script type="module">
const shipped = JSON.parse(document.getElementById("state").textContent);
const state = shipped.state;
const url = URL.createObjectURL(new Blob([shipped.esm], {{ type: "text/javascript" }}));
const {{ render }} = (await import(url)).default;
const model = {{
  get: (key) => state[key], set: (key, value) => {{ state[key] = value; }},
  save_changes() {{}}, on() {{}}, off() {{}},
}};
render({{ model, el: document.getElementById("el") }});
window.mounted = true;
</script>"""
    path = tmp_path / "widget.html"
    path.write_text(page_text, encoding="utf-8")
    with chromium(tmp_path / "profile") as context:
        page, _, errors = open_local(context, path)
        page.wait_for_function("() => window.mounted === true")
        hidden = page.eval_on_selector_all(
            ".gv-static", "els => els.map(e => getComputedStyle(e).display === 'none')"
        )
        panel = page.inner_text(".gv-panel")
        page.screenshot(path=str(tmp_path / "widget.png"))
    assert errors == []
    assert hidden == [True, False]
    assert "[[0.25, 0.25], [0.25, 0.25]]" in panel
