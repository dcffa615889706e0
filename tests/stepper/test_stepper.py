"""The notebook stepper driven from Python, no browser: steps, bounds, what goes over the wire."""

from __future__ import annotations

import re
from typing import Any

import comm
import pytest

import gradviz
from gradviz.model.recording import Recording
from gradviz.stepper.page import stepper_payload
from gradviz.teaching.lessons import lesson

pytestmark = pytest.mark.needs_dot

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def recording() -> Recording:
    built = lesson("ten-ops").build()
    return gradviz.record(*built.roots, names=built.names)


class Wire(comm.DummyComm):  # type: ignore[misc]
    """A comm that keeps what the widget sends, the way the front end would get it."""

    sent: list[tuple[str, dict[str, Any]]]

    def publish_msg(self, msg_type: str, data: Any = None, *args: Any, **kwargs: Any) -> None:
        if not hasattr(self, "sent"):
            self.sent = []
        self.sent.append((msg_type, data or {}))


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> list[Wire]:
    opened: list[Wire] = []

    def create(*args: Any, **kwargs: Any) -> Wire:
        made = Wire(*args, **kwargs)
        opened.append(made)
        return made

    monkeypatch.setattr(comm, "create_comm", create)
    return opened


def test_stepping_and_bounds(recording: Recording) -> None:
    stepper = gradviz.Stepper(recording)
    last = len(recording.steps)
    assert stepper.step == 0 and stepper.last == last == 7
    assert stepper.next() == 1 and stepper.frame.active == recording.order[0]
    assert stepper.prev() == 0 and stepper.prev() == 0  # stays at the seed
    assert stepper.goto(last) == last and stepper.next() == last  # stays at the end
    assert last == len(recording) == len(list(recording))  # N steps, numbered 1..N
    assert stepper.goto(3) == 3 and stepper.frame.active == recording.order[2]
    with pytest.raises(IndexError, match=r"steps 0 .* to 7"):
        stepper.goto(8)
    with pytest.raises(Exception, match="does not exist"):
        stepper.step = -1
    assert stepper.step == 3
    with pytest.raises(Exception, match="view must be one of"):
        stepper.view = "sideways"


def test_data_goes_once_then_only_the_step(recording: Recording, wire: list[Wire]) -> None:
    stepper = gradviz.Stepper(recording)
    (channel,) = [w for w in wire if "svgs" in w.sent[0][1].get("state", {})]
    kind, first = channel.sent[0]
    assert kind == "comm_open"
    opened = first["state"]
    assert set(opened["svgs"]) == {"backward"}  # other views are laid out when first chosen
    assert opened["data"]["views"] == ["backward", "combined"]
    assert opened["data"]["schedule"]["nodes"] and opened["step"] == 0
    assert re.search(r"export\{\w+ as default\};?\s*$", opened["_esm"])  # { render }
    before = len(channel.sent)
    stepper.next()
    stepper.goto(5)
    stepper.prev()
    updates = [data for kind, data in channel.sent[before:] if kind == "comm_msg"]
    assert [u["state"] for u in updates] == [{"step": 1}, {"step": 5}, {"step": 4}]


def test_a_view_is_laid_out_when_first_chosen(recording: Recording, wire: list[Wire]) -> None:
    stepper = gradviz.Stepper(recording)
    assert "combined" not in stepper.svgs
    # what the browser sends when the view menu picks a view the kernel has not sent yet
    stepper._on_message(stepper, {"type": "view", "name": "combined"})
    assert set(stepper.svgs) == {"backward", "combined"}
    assert 'class="gv_link' in stepper.svgs["combined"] or "gv_tensor" in stepper.svgs["combined"]
    stepper.view = "backward"
    with pytest.raises(Exception, match="views"):
        gradviz.Stepper(recording, views=["sideways"])
    only = gradviz.Stepper(recording, views=["backward"])
    assert only.data["views"] == ["backward"]
    with pytest.raises(Exception, match="view must be one of"):
        only.view = "combined"


def test_front_end_moves_python(recording: Recording, wire: list[Wire]) -> None:
    stepper = gradviz.Stepper(recording)
    seen: list[int] = []
    stepper.observe(lambda change: seen.append(change["new"]), names="step")
    message = {"content": {"data": {"method": "update", "state": {"step": 4}}}, "buffers": []}
    stepper._handle_msg(message)
    assert stepper.step == 4 and seen == [4]
    assert stepper.frame.active == recording.order[3]


def test_svg_of_the_current_step_marks_its_node(recording: Recording) -> None:
    stepper = gradviz.Stepper(recording)
    stepper.goto(2)
    prefix = recording.graph.prefix
    svg = stepper.svg()
    assert f'id="{prefix}_{recording.order[1]}" class="node gv_node gv_active"' in svg


def test_recording_displays_as_stepper_with_html_fallback(recording: Recording) -> None:
    data, _metadata = recording._repr_mimebundle_()
    assert data[WIDGET_VIEW]["model_id"]
    html = data["text/html"]
    assert "<svg" in html and "gv-replay-data" in html  # the final step, and the stepper
    final = f'id="{recording.graph.prefix}_{recording.order[-1]}" class="node gv_node gv_active"'
    picture = data["image/svg+xml"]
    assert final in picture and picture in html
    assert 'gv_hidegrad"' not in picture  # every gradient has flowed by the final step
    assert "Recording" in data["text/plain"]


def test_payload_svgs_start_at_the_given_step(recording: Recording) -> None:
    from gradviz.replay.frames import classes_at
    from gradviz.stepper.page import stepper_payload

    payload = stepper_payload(recording, step=2)
    svg = payload["svgs"]["backward"]
    assert svg.startswith("<svg")
    shipped = dict(re.findall(r'<g id="([^"]+)" class="[^"]*?(gv_[a-z]+)"', svg))
    expected = classes_at(payload["data"]["schedule"], 2)
    assert {k: v for k, v in shipped.items() if k in expected} == expected


def test_watched_stepper_sends_forward_steps_as_plain_numbers(wire: list[Wire]) -> None:
    """Under watch() the forward frames are steps -F..-1; only ``step`` travels, as before."""
    with gradviz.watch() as w:
        built = lesson("ten-ops").build()
    watched = w.record(*built.roots)
    stepper = gradviz.Stepper(watched)
    (channel,) = [c for c in wire if "svgs" in c.sent[0][1].get("state", {})]
    opened = channel.sent[0][1]["state"]
    # it opens on the first frame that draws something: the first three make constants
    born = stepper_payload(watched, lazy=True)["data"]["schedule"]["born"]["backward"]
    assert opened["step"] == min(born.values()) == -9
    assert opened["data"]["first"] == -12
    assert len(opened["data"]["forward"]) == len(watched.forward_ops)
    before = len(channel.sent)
    stepper.next()
    stepper.goto(-1)
    stepper.next()
    updates = [data for kind, data in channel.sent[before:] if kind == "comm_msg"]
    assert [u["state"] for u in updates] == [{"step": -8}, {"step": -1}, {"step": 0}]
    assert stepper.frame.active is None  # the seed
