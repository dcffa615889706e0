"""A save that fails half-way (a full disk) leaves the previous file as it was, and no
temporary file beside it: slides (.pdf, .pptx) and a diff's files go through
``gradviz.atomic`` like every other save."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

import gradviz
from tests.support.full_disk import fill_disk


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[[], None]:
    """Call it to make every file opened for writing under ``tmp_path`` (by name or, as
    ``os.fdopen`` does, by descriptor) fail half-way through its first write."""

    def start() -> None:
        fill_disk(monkeypatch, tmp_path)

    return start


def _recording(scale: float = 1.0) -> gradviz.Recording:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([3.0, 4.0], requires_grad=True)
    return gradviz.record((x * w * scale).tanh().sum(), names={"x": x, "w": w})


def _check_kept(path: Path, save: Callable[[], object], full_disk: Callable[[], None]) -> None:
    before = path.read_bytes()
    assert before, "the first save wrote nothing"
    full_disk()
    with pytest.raises(OSError, match="No space"):
        save()
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temp file left


@pytest.mark.needs_dot
@pytest.mark.parametrize("suffix", [".pdf", ".pptx"])
def test_a_failed_slides_save_keeps_the_previous_file(
    suffix: str, tmp_path: Path, full_disk: Callable[[], None]
) -> None:
    path = tmp_path / f"slides{suffix}"
    _recording().save(path)
    again = _recording(2.0)
    _check_kept(path, lambda: again.save(path), full_disk)


@pytest.mark.needs_dot
@pytest.mark.parametrize("suffix", [".html", ".svg", ".dot", ".json"])
def test_a_failed_diff_save_keeps_the_previous_file(
    suffix: str, tmp_path: Path, full_disk: Callable[[], None]
) -> None:
    path = tmp_path / f"diff{suffix}"
    diff = _recording().diff(_recording(2.0))
    diff.save(path)
    _check_kept(path, lambda: diff.save(path), full_disk)
