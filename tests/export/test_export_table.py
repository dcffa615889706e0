"""Every object gradviz can save saves the same way: ``save(path, **options) -> Path``, by
the suffix, through one table (``gradviz.export.files.WRITERS``) and one door that writes
the file whole or not at all; a suffix it cannot be saved as is ``UnsupportedFormat``."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path
from typing import Any

import pytest
import torch
import typing_extensions

import gradviz
from gradviz.errors import InvalidArgument, UnsupportedFormat
from gradviz.export import files
from tests.support.full_disk import fill_disk

# what each object saves as: the promise of the docs, stated apart from the table
SAVES_AS: dict[str, set[str]] = {
    "graph": {".svg", ".png", ".pdf", ".dot", ".json"},
    "watched graph": {".svg", ".png", ".pdf", ".dot", ".json"},
    "recording": {".svg", ".html", ".json", ".pdf", ".pptx", ".mp4", ".gif"},
    "watched recording": {".svg", ".html", ".json", ".pdf", ".pptx", ".mp4", ".gif"},
    "diff": {".html", ".svg", ".dot", ".json"},
    "in-place explanation": {".svg", ".png", ".pdf", ".dot"},
    "why no grad": {".svg", ".png", ".pdf", ".dot"},
    "optimizer step": {".html", ".json"},
    "training run": {".html", ".json"},
}
SUFFIXES = sorted({*files.FORMATS, ".xyz", ".SVG"})


def _make() -> dict[str, Any]:
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 1)
    with gradviz.watch(model) as w:
        x = torch.tensor([[1.0, 2.0]], requires_grad=True)
        hidden = model(x).tanh()
        cut = hidden.detach() * x
        loss = (hidden * 2).sum() + cut.sum()
    plain = torch.tensor([1.0, 2.0], requires_grad=True)
    a = gradviz.record((plain * 3).sin().sum(), names={"x": plain})
    b = gradviz.record((plain * 3.001).sin().sum(), names={"x": plain})
    graph = w.trace(loss)
    watched = w.record(loss, retain_graph=True)  # before the optimizer changes the weights
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    step = gradviz.record_step(optimizer, model(torch.ones(1, 2)).sum(), params=model)
    with gradviz.watch_training(model, optimizer) as run:
        for _ in range(2):
            optimizer.zero_grad()
            model(torch.ones(1, 2)).sum().backward()
            optimizer.step()
    return {
        "graph": gradviz.trace((plain * 3).sin().sum()),
        "watched graph": graph,
        "recording": a,
        "watched recording": watched,
        "diff": a.diff(b),
        "in-place explanation": gradviz.explain_inplace(graph),
        "why no grad": w.why_no_grad(x, loss),
        "optimizer step": step,
        "training run": run,
    }


@pytest.fixture(scope="module")
def saveable() -> dict[str, Any]:
    return _make()


@pytest.mark.needs_dot
@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("name", sorted(SAVES_AS))
def test_every_saveable_object_saves_every_suffix_whole_or_refuses_it(
    name: str,
    suffix: str,
    saveable: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    obj = saveable[name]
    target = tmp_path / f"out{suffix}"
    if suffix.lower() not in SAVES_AS[name]:
        with pytest.raises(UnsupportedFormat, match="cannot save") as refused:
            obj.save(target)
        assert isinstance(refused.value, InvalidArgument)
        assert not list(tmp_path.iterdir())
        return
    written = obj.save(str(target))
    assert type(written) is type(target) and written == target
    first = target.read_bytes()
    assert first
    fill_disk(monkeypatch, tmp_path)
    with pytest.raises(OSError, match="No space"):
        obj.save(target)
    assert target.read_bytes() == first  # the failed save left the old file whole
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # and no temporary file


def test_the_table_says_what_each_object_saves_as(saveable: dict[str, Any]) -> None:
    assert {name: set(files.suffixes(obj)) for name, obj in saveable.items()} == SAVES_AS


def test_every_save_method_has_one_signature(saveable: dict[str, Any]) -> None:
    """``save(path, **typed options) -> Path`` on every public class that saves."""
    for obj in saveable.values():
        method = type(obj).save
        hints = typing.get_type_hints(method, include_extras=True)
        assert hints["return"] is Path, type(obj)
        parameters = list(inspect.signature(method).parameters.values())
        assert [p.name for p in parameters[:2]] == ["self", "path"]
        keywords = parameters[-1]
        assert keywords.kind is inspect.Parameter.VAR_KEYWORD, type(obj)
        typed = hints[keywords.name]
        assert typing_extensions.get_origin(typed) is typing_extensions.Unpack, type(obj)
        (options,) = typing_extensions.get_args(typed)
        assert typing_extensions.is_typeddict(options), type(obj)


def test_every_file_goes_through_the_door(tmp_path: Path) -> None:
    """A suffix gradviz does not write is refused by the door itself."""
    with pytest.raises(UnsupportedFormat):
        files.write_file(tmp_path / "x.exe", b"")
    assert files.write_file(tmp_path / "x.txt", "text") == tmp_path / "x.txt"


def test_an_object_without_writers_is_unsupported(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedFormat, match="cannot save int objects"):
        files.save(3, tmp_path / "x.svg", {})


def test_no_module_outside_export_writes_a_file() -> None:
    """``gradviz.export`` is the one door: nothing else writes, atomically or not."""
    package = Path(gradviz.__file__).parent
    writers = ("atomic_write(", ".write_text(", ".write_bytes(", 'open("w', "open('w")
    found = [
        f"{path.relative_to(package)}: {needle}"
        for path in package.rglob("*.py")
        if path.parent.name != "export" and path.name != "atomic.py"
        for needle in writers
        if needle in path.read_text(encoding="utf-8")
    ]
    assert not found, found
