"""rec.save("replay.mp4") / ("replay.gif"): every frame with its caption, at the size and
pace asked, the same bytes every time, written whole."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import gradviz
from gradviz.errors import GradvizError, InvalidArgument
from gradviz.replay import video
from gradviz.teaching.lessons import lesson

av = pytest.importorskip("av")
Image = pytest.importorskip("PIL.Image")

pytestmark = pytest.mark.needs_dot


@pytest.fixture(scope="module")
def ten_ops() -> gradviz.Recording:
    return lesson("ten-ops").build().record()


def decoded(path: Path) -> tuple[list[Any], int, int, float]:
    """The decoded frames (as pictures), the size and the duration in seconds."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        pictures = [frame.to_image() for frame in container.decode(video=0)]
        seconds = float(stream.duration * stream.time_base)
        return pictures, stream.width, stream.height, seconds


def test_mp4_has_each_step_for_its_seconds_at_the_size(
    ten_ops: gradviz.Recording, tmp_path: Path
) -> None:
    steps = len(ten_ops.frames())  # the seed and every backward step
    path = ten_ops.save(tmp_path / "replay.mp4", size=(640, 360), seconds_per_step=0.5, fps=8)
    pictures, width, height, seconds = decoded(path)
    assert len(pictures) == steps * 8 * 0.5
    assert (width, height) == (640, 360)
    assert seconds == pytest.approx(steps * 0.5)
    # each step's frames repeat one picture; the next step's picture differs
    first, second = pictures[0], pictures[4]
    assert first.tobytes() != second.tobytes()
    # the caption band holds dark text on the white background
    band = first.convert("L").crop((0, 300, 640, 360))
    assert band.getextrema()[0] < 100
    again = ten_ops.save(tmp_path / "again.mp4", size=(640, 360), seconds_per_step=0.5, fps=8)
    assert again.read_bytes() == path.read_bytes()


def test_gif_has_one_frame_per_step_with_its_duration(
    ten_ops: gradviz.Recording, tmp_path: Path
) -> None:
    steps = len(ten_ops.frames())
    path = ten_ops.save(tmp_path / "replay.gif", size=(480, 270), seconds_per_step=1.5)
    with Image.open(path) as gif:
        assert gif.n_frames == steps
        assert gif.size == (480, 270)
        durations = []
        for index in range(gif.n_frames):
            gif.seek(index)
            durations.append(gif.info["duration"])
        assert durations == [1500] * steps
        assert gif.info["loop"] == 0
    again = ten_ops.save(tmp_path / "again.gif", size=(480, 270), seconds_per_step=1.5)
    assert again.read_bytes() == path.read_bytes()


@pytest.mark.slow
def test_the_default_size_and_pace(ten_ops: gradviz.Recording, tmp_path: Path) -> None:
    pictures, width, height, seconds = decoded(ten_ops.save(tmp_path / "replay.mp4"))
    steps = len(ten_ops.frames())
    assert (width, height) == video.DEFAULT_SIZE
    assert len(pictures) == steps * video.DEFAULT_FPS
    assert seconds == pytest.approx(steps * 1.0)


def test_wrong_keywords_say_what_to_do(ten_ops: gradviz.Recording, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match=r"fps= is for \.mp4"):
        ten_ops.save(tmp_path / "r.gif", fps=10)
    with pytest.raises(InvalidArgument, match=r"size= is for \.mp4, \.gif"):
        ten_ops.save(tmp_path / "r.svg", size=(640, 360))
    with pytest.raises(InvalidArgument, match="even width and height"):
        ten_ops.save(tmp_path / "r.mp4", size=(641, 360))
    with pytest.raises(InvalidArgument, match=r"size= takes \(width, height\)"):
        ten_ops.save(tmp_path / "r.mp4", size="720p")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="less than one frame"):
        ten_ops.save(tmp_path / "r.mp4", fps=1, seconds_per_step=0.1)
    assert not list(tmp_path.iterdir())


def test_without_the_extra_the_error_says_what_to_install(
    ten_ops: gradviz.Recording, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "av", None)  # import av now raises ImportError
    with pytest.raises(GradvizError, match=r"pip install torch-gradviz\[video\]"):
        ten_ops.save(tmp_path / "r.mp4")
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(GradvizError, match=r"pip install torch-gradviz\[video\]"):
        ten_ops.save(tmp_path / "r.gif")
    assert not list(tmp_path.iterdir())


def test_a_failing_encoder_keeps_the_old_file(
    ten_ops: gradviz.Recording, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "replay.mp4"
    target.write_bytes(b"the old video")

    def failing(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(video, "_encode", failing)
    with pytest.raises(OSError, match="disk full"):
        ten_ops.save(target, size=(320, 180))
    assert target.read_bytes() == b"the old video"
    assert [p.name for p in tmp_path.iterdir()] == ["replay.mp4"]


def test_forward_frames_come_first_and_the_theme_colours_the_frame(tmp_path: Path) -> None:
    with gradviz.watch() as w:
        built = lesson("ten-ops").build()
    rec = built.record(w)
    frames = len(rec.forward_ops) + len(rec.frames())  # -F..-1, then the seed and 1..N
    assert len(rec.forward_ops) > 0
    path = rec.save(tmp_path / "replay.gif", size=(320, 180), seconds_per_step=0.5, theme="dark")
    with Image.open(path) as gif:
        assert gif.n_frames == frames
        corner = gif.convert("RGB").getpixel((0, 0))
    assert max(corner) < 64  # the dark theme's background, letterbox and caption band
