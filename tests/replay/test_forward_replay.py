"""The replay of the forward pass, op by op, before the backward pass (under watch()).

Steps -F..-1 are the forward frames (one per forward op, in the order they ran), 0 the seed
and 1..N the backward steps, as without watch(). Each forward frame reveals exactly what
its op made: its output tensors, and the backward nodes it created.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

import gradviz
from gradviz.model.recording import Recording
from gradviz.render.watched import box_name
from gradviz.replay.frames import (
    _layout,
    _schedule,
    classes_at,
    first_step,
    forward_frames,
    replay_born,
    replay_data,
)
from gradviz.stepper.page import stepper_payload
from gradviz.teaching.lessons import lesson

pytestmark = pytest.mark.needs_dot

LETTERS = "abcdefghijk"


@pytest.fixture(scope="module")
def watched() -> Recording:
    with gradviz.watch() as w:
        built = lesson("ten-ops").build()
    return w.record(*built.roots)


@pytest.fixture(scope="module")
def plain() -> Recording:
    built = lesson("ten-ops").build()
    return gradviz.record(*built.roots, names=built.names)


def _schedule_of(recording: Recording) -> dict[str, object]:
    prefix = recording.graph.prefix
    return _schedule(recording, prefix, replay_born(recording, ("backward", "combined")))


def _born_at(schedule: dict[str, object], index: int, view: str) -> set[str]:
    return {k for k, v in classes_at(schedule, index, view).items() if "gv_born" in v.split()}


def test_forward_frames_follow_the_ops_in_order(watched: Recording) -> None:
    ops = watched.forward_ops
    frames = forward_frames(watched)
    assert len(frames) == len(ops) == 12 and first_step(watched) == -12
    assert [f.op for f in frames] == ops  # the very ops, in the order they ran
    assert [f.step for f in frames] == list(range(-12, 0))
    assert [f.index for f in frames] == list(range(1, 13))
    forward = watched.graph.forward
    assert forward is not None
    made = [forward.label(t) for f in frames for t in f.outputs if f.op.kind != "requires_grad"]
    assert made == list(LETTERS)  # a .. k, each made by its own op
    assert watched.forward_frame(-9).narration == (  # the 4th of 12 ops: step 4 - 12 - 1
        f"c.requires_grad = True at {ops[3].line.short()}: "  # type: ignore[union-attr]
        "c joins the graph (a leaf that requires grad)"
    )
    assert "i = g / h at lessons.py:" in frames[9].narration
    assert frames[9].narration.endswith(": DivBackward0 recorded")
    with pytest.raises(IndexError, match="-12 to -1"):
        watched.forward_frame(0)


def test_each_backward_node_appears_with_the_op_that_made_it(watched: Recording) -> None:
    frames = forward_frames(watched)
    seen: list[str] = []
    for frame in frames:
        for node_id in frame.nodes:
            assert watched.forward_op(node_id) is frame.op
        seen += frame.nodes
        assert frame.visible_nodes == tuple(n.id for n in watched.graph.nodes if n.id in seen)
    assert sorted(seen) == sorted(n.id for n in watched.graph.nodes)
    by_name = {f.op.line.text.strip(): f for f in frames if f.op.line}  # type: ignore[union-attr]
    c = watched.graph.tensor("c")
    assert by_name["c.requires_grad = True"].nodes == (c.node_id,)  # AccumulateGrad(c)
    assert by_name["c = a * b"].nodes == ()  # nothing required grad yet


def test_each_forward_frame_reveals_exactly_its_outputs(watched: Recording) -> None:
    """Combined view: the op node, its output boxes, the edges into and out of it. A tensor
    has one box per state: ``c.requires_grad = True`` reveals c's box on the graph (its
    record), beside the box of c off the graph that ``c = a * b`` made."""
    schedule = _schedule_of(watched)
    prefix = watched.graph.prefix
    forward = watched.graph.forward
    assert forward is not None
    record_of = {link: f"{prefix}_{record}" for record, link in forward.tensor_links.items()}

    def box_id(tensor_id: str, state: int) -> str:
        last = len(forward.tensor(tensor_id).states) - 1
        if state == last and tensor_id in record_of:
            return record_of[tensor_id]
        return f"{prefix}_{box_name(tensor_id, state)}"

    made = [
        [box_id(t, s) for t, s in zip(f.outputs, forward.states_in(f.op)[1], strict=True)]
        for f in forward_frames(watched)
    ]
    boxes = {b for frame_boxes in made for b in frame_boxes}
    ops = {f"{prefix}_op{op.index}" for op in watched.forward_ops}
    c = forward.tensor("c")
    assert [box_id(c.id, s) for s in range(len(c.states))] == [
        f"{prefix}_{c.id}",
        f"{prefix}_{watched.graph.tensor('c').id}",
    ]
    for frame in forward_frames(watched):
        born = _born_at(schedule, frame.step, "combined")
        op = frame.op
        assert born & boxes == set(made[frame.index - 1]), op.name
        expected_op = set() if op.kind == "factory" else {f"{prefix}_op{op.index}"}
        assert born & ops == expected_op
        assert {f"{prefix}_{n}" for n in frame.nodes} <= born
        for element in born:  # an edge appears with its later end: this op's element
            match = re.fullmatch(rf"{prefix}_fe_(\w+?)_(op\d+|f\d+(?:_s\d+)?)", element)
            if match:
                assert f"op{op.index}" in match.groups(), element
        future = {
            k for k, v in classes_at(schedule, frame.step, "combined").items() if "gv_future" in v
        }
        later = {b for frame_boxes in made[frame.index :] for b in frame_boxes}
        later -= {b for frame_boxes in made[: frame.index] for b in frame_boxes}
        assert later <= future


def test_backward_view_grows_node_by_node(watched: Recording) -> None:
    schedule = _schedule_of(watched)
    prefix = watched.graph.prefix
    nodes = {f"{prefix}_{n.id}" for n in watched.graph.nodes}
    for frame in forward_frames(watched):
        classes = classes_at(schedule, frame.step, "backward")
        visible = {n for n in nodes if "gv_future" not in classes.get(n, "")}
        assert visible == {f"{prefix}_{n}" for n in frame.visible_nodes}
        assert _born_at(schedule, frame.step, "backward") & nodes == {
            f"{prefix}_{n}" for n in frame.nodes
        }
        assert all(
            not set(c.split()) & {"gv_pending", "gv_done", "gv_active"} for c in classes.values()
        )


def test_backward_frames_are_unchanged_by_watch(watched: Recording, plain: Recording) -> None:
    """From the seed on, the classes are those of the same lesson recorded without watch."""
    schedule = _schedule_of(watched)
    reference = _schedule(plain, plain.graph.prefix)
    rename = {plain.graph.prefix: watched.graph.prefix}
    assert len(watched) == len(plain) and watched.order == plain.order
    for index in range(len(watched) + 1):
        for view in ("backward", "combined"):
            assert classes_at(schedule, index, view) == {
                k.replace(*next(iter(rename.items()))): v
                for k, v in classes_at(reference, index, view).items()
            }
        assert watched.frame(index).active == (watched.order[index - 1] if index else None)


def test_recordings_without_watch_have_no_forward_frames(plain: Recording, tmp_path: Path) -> None:
    assert first_step(plain) == 0 and replay_born(plain, ("backward", "combined")) == {}
    data = replay_data(plain)
    assert "first" not in data and "forward" not in data and "born" not in data["schedule"]
    assert [p.name for p in plain.save_steps(tmp_path)][:1] == ["step-000.svg"]
    assert "gv_future" not in plain.svg(step=0)
    with pytest.raises(IndexError, match="no forward frames"):
        plain.forward_frame(-1)
    with pytest.raises(IndexError, match=r"steps 0 \(the seed\) to 7$"):
        plain.svg(step=-1)


def test_step_svgs_and_files_of_forward_frames(watched: Recording, tmp_path: Path) -> None:
    paths = watched.save_steps(tmp_path)
    names = [p.name for p in paths]
    assert names[:12] == [f"forward-{j:03d}.svg" for j in range(1, 13)]
    assert names[12:] == [f"step-{i:03d}.svg" for i in range(len(watched) + 1)]
    prefix = watched.graph.prefix
    first = paths[0].read_text()
    k_node = f"{prefix}_{watched.graph.tensor('k').node_id}"
    assert re.search(rf'id="{k_node}" class="[^"]*\bgv_future\b', first)
    assert ".gv_future{" in first
    last_forward = paths[11].read_text()
    assert re.search(rf'id="{k_node}" class="[^"]*\bgv_born\b', last_forward)
    assert 'gv_future"' not in paths[12].read_text()  # from the seed on, everything exists
    combined = watched.svg(step=-10, view="combined")  # c = a * b just ran
    c_off = f"{prefix}_{watched.graph.forward.tensor('c').id}"  # type: ignore[union-attr]
    c_record = f"{prefix}_{watched.graph.tensor('c').id}"  # c on the graph: not yet
    assert re.search(rf'id="{c_off}" class="[^"]*\bgv_born\b', combined)
    assert re.search(rf'id="{c_record}" class="[^"]*\bgv_future\b', combined)
    switched = watched.svg(step=-9, view="combined")  # c.requires_grad = True just ran
    assert re.search(rf'id="{c_record}" class="[^"]*\bgv_born\b', switched)
    with pytest.raises(IndexError, match="forward frames -12 to -1"):
        watched.svg(step=-13)


def test_stepper_opens_on_the_first_forward_op_that_draws_something(watched: Recording) -> None:
    stepper = gradviz.Stepper(watched)
    born = stepper_payload(watched, lazy=True)["data"]["schedule"]["born"]["backward"]
    assert stepper.first == -12 and stepper.last == 7
    assert stepper.step == min(born.values()) > stepper.first  # the first ops make constants
    assert stepper.goto(stepper.first) == -12
    assert stepper.frame.op is watched.forward_ops[0]  # type: ignore[union-attr]
    assert stepper.prev() == -12  # stays at the first forward op
    assert stepper.goto(-3) == -3 and "DivBackward0" in stepper.frame.narration
    assert stepper.next() == -2 and stepper.goto(3) == 3  # one numbering: -F..-1, 0, 1..N
    assert stepper.frame.active == watched.order[2]  # type: ignore[union-attr]
    assert stepper.goto(len(watched)) == 7  # the last step is N = len(recording)
    stepper.step = -1
    assert stepper.frame.op is watched.forward_ops[-1]  # type: ignore[union-attr]
    assert 'gv_born"' in stepper.svg() or "gv_born " in stepper.svg()
    with pytest.raises(Exception, match="does not exist"):
        stepper.step = -13
    assert gradviz.Stepper(watched, step=0).step == 0


def test_payload_ships_forward_frames(watched: Recording) -> None:
    from gradviz.stepper.page import replay_html, stepper_payload

    payload = stepper_payload(watched, step=-5)
    data = payload["data"]
    assert data["first"] == -12 and data["count"] == len(watched) + 1
    assert [f["narration"] for f in data["forward"]] == [
        f.narration for f in forward_frames(watched)
    ]
    assert set(data["schedule"]["born"]) == {"backward", "combined"}
    assert ".gv_future{" in payload["css"]["scoped"] and ".gv_born{" in payload["css"]["plain"]
    svg = payload["svgs"]["combined"]
    replay = ("gv_hidegrad", "gv_flowing", "gv_future", "gv_born")
    shipped = {
        element: " ".join(c for c in classes.split() if c in replay)
        for element, classes in re.findall(r'<g id="([^"]+)" class="([^"]*)"', svg)
    }
    expected = classes_at(data["schedule"], -5, "combined")
    assert {k: v for k, v in shipped.items() if v} == expected
    page = replay_html(watched)
    assert '"step":-12' in page and "12 forward ops, then 7 steps" in page


def test_layout_is_shared_by_all_frames(watched: Recording) -> None:
    template, _, born = _layout(watched, view="combined")
    assert born and set(born) <= set(template.ids)  # every scheduled element is drawn


def test_in_place_frame_names_the_version_bump() -> None:
    with gradviz.watch() as w:
        a = torch.tensor(2.0, requires_grad=True)
        b = torch.tensor(3.0, requires_grad=True)
        c = a * b
        d = torch.tensor(4.0, requires_grad=True)
        e = c + d
        c += 1
    recording = w.record(e)
    last = forward_frames(recording)[-1]
    assert last.op.kind == "inplace" and last.step == -1
    assert last.narration.startswith("c += 1 at ")
    assert "c's version 0 → 1" in last.narration
    schedule = _schedule_of(recording)
    prefix = recording.graph.prefix
    born = _born_at(schedule, -1, "combined")
    assert f"{prefix}_op{last.op.index}" in born  # the in-place op and c's new version
    assert any(element.startswith(f"{prefix}_fe_op{last.op.index}_") for element in born)
