"""The stepper widget's mime bundle: beside the widget view, an offline stepper (text/html,
its script inline) opened in the view the widget shows, and a static picture (SVG) of that
view, for the places where the widget cannot run; both bounded in size."""

from __future__ import annotations

import re
from typing import Any

import pytest
import torch

import gradviz
from gradviz.render.pagesvg import page_svg
from gradviz.replay.frames import step_svg
from gradviz.stepper import embed
from gradviz.stepper.page import unpack_state
from gradviz.teaching.lessons import lesson

pytest.importorskip("anywidget")

pytestmark = pytest.mark.needs_dot

WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def recording() -> Any:
    with gradviz.watch() as watching:
        built = lesson("02-chain").build()
    return built.record(watching)


def _ids(svg: str) -> set[str]:
    return set(re.findall(r'<g id="([^"]+)" class="node', svg))


def test_the_bundle_carries_the_widget_an_offline_stepper_and_a_picture(recording: Any) -> None:
    stepper = gradviz.Stepper(recording, view="combined")
    data, _ = stepper._repr_mimebundle_()
    assert {WIDGET, "text/plain", "text/html", "image/svg+xml"} <= set(data)
    page = data["text/html"]
    state = unpack_state(page)
    assert state["view"] == "combined"
    assert len(state["data"]["steps"]) == len(recording.steps) + 1  # the seed, then each step
    assert "combined" in state["svgs"]
    scripts = re.findall(r"<script([^>]*)>", page)
    assert any('type="module"' in s for s in scripts)
    assert not any("src=" in s for s in scripts)  # the script is inline: nothing to fetch
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    picture = data["image/svg+xml"]
    assert picture.startswith("<svg")
    assert _ids(picture) == _ids(state["svgs"]["combined"])
    assert _ids(picture) != _ids(
        unpack_state(_bundle_in(recording, "backward"))["svgs"]["backward"]
    )


def _bundle_in(recording: Any, view: str) -> str:
    stepper = gradviz.Stepper(recording, view=view)
    return str(stepper._repr_mimebundle_()[0]["text/html"])


def test_the_bundle_follows_the_view_chosen_in_the_widget(recording: Any) -> None:
    stepper = gradviz.Stepper(recording)
    assert stepper.view != "combined"
    stepper.view = "combined"  # what the browser sends when the view is picked there
    data, _ = stepper._repr_mimebundle_()
    assert unpack_state(data["text/html"])["view"] == "combined"
    # the picture: the final step in that view, wherever the widget stands
    assert stepper.step != stepper.last
    final = page_svg(step_svg(recording, stepper.last, view="combined"))
    assert data["image/svg+xml"] == final
    assert final in data["text/html"]  # and inside the page, for where scripts do not run


def test_a_recording_over_the_bound_gets_the_picture_and_a_note(
    recording: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embed, "EMBED_BYTES", 20_000)  # the small lesson's page is ~100 kB
    data, _ = gradviz.Stepper(recording, view="combined")._repr_mimebundle_()
    page = data["text/html"]
    assert "gv-replay-data" not in page and "<script" not in page
    assert "<svg" in page and data["image/svg+xml"].startswith("<svg")
    assert ".save(" in page  # the note says how to get the offline stepper
    assert len(page.encode("utf-8")) < 2 * len(data["image/svg+xml"].encode("utf-8")) + 4000


def test_a_picture_over_the_bound_is_left_out_with_a_note(
    recording: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embed, "EMBED_BYTES", 500)
    data, _ = gradviz.Stepper(recording, view="combined")._repr_mimebundle_()
    assert "image/svg+xml" not in data
    assert "<svg" not in data["text/html"] and ".save(" in data["text/html"]


def test_in_a_kernel_the_fallback_is_its_own_output_and_follows_the_view(
    recording: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Published once beside the widget, with a display id; a view picked later in the
    widget updates that output, so the notebook saves the view the stepper shows."""
    from gradviz.stepper import widget

    published: list[tuple[dict[str, str], dict[str, Any], bool]] = []

    def publish(data: dict[str, str], transient: Any = None, update: bool = False) -> None:
        published.append((data, transient or {}, update))

    monkeypatch.setattr(widget, "_in_kernel", lambda: True)
    monkeypatch.setattr(widget, "_publish", publish)
    stepper = gradviz.Stepper(recording)
    data, _ = stepper._repr_mimebundle_()
    assert "text/html" not in data and "image/svg+xml" not in data
    assert len(published) == 1
    first, transient, update = published[0]
    assert not update and transient["display_id"]
    assert f'data-gv-fallback="gv-{stepper.model_id}"' in first["text/html"]
    assert unpack_state(first["text/html"])["view"] == stepper.view
    stepper.view = "combined"
    assert len(published) == 2
    second, again, update = published[1]
    assert update and again["display_id"] == transient["display_id"]
    assert unpack_state(second["text/html"])["view"] == "combined"
    assert _ids(second["image/svg+xml"]) == _ids(
        unpack_state(second["text/html"])["svgs"]["combined"]
    )


def test_a_plain_torch_recording_still_has_one_view(recording: Any) -> None:
    a = torch.tensor(2.0, requires_grad=True)
    data, _ = gradviz.Stepper(gradviz.record(a * 3, names={"a": a}))._repr_mimebundle_()
    assert unpack_state(data["text/html"])["view"] == "backward"
