"""A big page's data is packed at zlib's quicker level 6, and at level 9 only where the quicker
packing leaves the page over its weight budget (``PAGE_BYTES_PER_NODE``): the toggles stay
whenever the tight packing fits them, and the data is the same either way."""

from __future__ import annotations

import gzip
import warnings
import zlib

import pytest
import torch

import gradviz
from gradviz import GradvizWarning
from gradviz.stepper import page as page_module
from gradviz.stepper.page import QUICK_LEVEL, TIGHT_LEVEL, replay_html, unpack_state
from gradviz.stepper.sevenbit import from_seven_bit


@pytest.fixture(scope="module")
def rec() -> gradviz.Recording:
    """Enough data (1 MB of JSON) that the two levels pack it to different sizes."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(*(torch.nn.Linear(16, 16) for _ in range(40)))
    with gradviz.watch(model) as w:
        loss = model(torch.randn(3, 16)).square().mean()
    return w.record(loss)


def packed_bytes(page: str) -> bytes:
    text = page.split('data-encoding="gzip+7bit">', 1)[1].split("</script>", 1)[0]
    return from_seven_bit(text)


def level_of(page: str) -> int:
    """The level the page's gzip stream was written at: repacking its JSON at that level
    gives back its exact bytes."""
    packed = packed_bytes(page)
    plain = gzip.decompress(packed)
    for level in (QUICK_LEVEL, TIGHT_LEVEL):
        packer = zlib.compressobj(level, zlib.DEFLATED, 31)
        if packer.compress(plain) + packer.flush() == packed:
            return level
    raise AssertionError("packed at neither level")


def save(rec: gradviz.Recording) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GradvizWarning)  # a cheaper dot setting, said once
        return replay_html(rec, compress=True)


def test_a_page_well_within_budget_is_packed_at_the_quick_level(
    rec: gradviz.Recording, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(page_module, "PAGE_BYTES_PER_NODE", 10**6)
    page = save(rec)
    assert level_of(page) == QUICK_LEVEL
    assert {"memory", "health"} <= set(unpack_state(page)["data"])


def test_a_page_the_quick_level_takes_over_budget_is_packed_tight_with_its_toggles(
    rec: gradviz.Recording, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(page_module, "PAGE_BYTES_PER_NODE", 10**6)
    quick = save(rec)
    nodes = len(rec.graph.nodes)
    plain = gzip.decompress(packed_bytes(quick))
    tight_size = len(quick.encode("utf-8")) - len(packed_bytes(quick)) * 8 // 7
    tight_size += len(gzip.compress(plain, TIGHT_LEVEL)) * 8 // 7
    quick_size = len(quick.encode("utf-8"))
    assert tight_size < quick_size - 2 * nodes, "the levels must differ for this test"
    monkeypatch.setattr(page_module, "PAGE_BYTES_PER_NODE", (quick_size - nodes) // nodes)
    chosen = save(rec)
    assert level_of(chosen) == TIGHT_LEVEL
    assert unpack_state(chosen) == unpack_state(quick)  # toggles kept, nothing else changed
    assert len(chosen.encode("utf-8")) <= page_module.PAGE_BYTES_PER_NODE * nodes
