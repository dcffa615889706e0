"""A notebook exported to HTML (nbconvert, no network) shows the final step as a static
picture where the stepper widget cannot run, with and without saved widget state."""

from __future__ import annotations

import re

import pytest
from test_notebooks import kernel_name  # noqa: F401  # a kernelspec for this interpreter

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
def executed(kernel_name: str) -> object:  # noqa: F811
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL)])
    client = nbclient.NotebookClient(notebook, timeout=180, kernel_name=kernel_name)
    client.execute()  # stores the widget state in the notebook's metadata, as Lab can
    return notebook


def _exported(notebook: object) -> str:
    body, _ = nbconvert.HTMLExporter().from_notebook_node(notebook)
    return str(body)


def _static_pictures(page: str) -> list[str]:
    return re.findall(r'<div class="gv-static"[^>]*>\s*<div>\s*<svg', page)


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
