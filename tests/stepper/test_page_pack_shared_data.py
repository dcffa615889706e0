"""A big page whose Memory and Health toggles may take it over the weight budget is packed
once per zlib level: the data both versions share goes through gzip once (at the quick
level, then at the tight one where the quick one is over budget), and each version is
exactly what packing it alone gives."""

from __future__ import annotations

import gzip
import json
import zlib
from typing import Any

import pytest
import torch

import gradviz
from gradviz.stepper import page as page_module
from gradviz.stepper.page import replay_html, unpack_state


def recording() -> gradviz.Recording:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    with gradviz.watch(model) as w:
        loss = model(torch.randn(3, 4)).square().mean()
    return w.record(loss)


class _Counting:
    """Counts the bytes every gzip compression of the page module is given."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.fed = 0
        real_compress, real_object = gzip.compress, zlib.compressobj

        def compress(data: bytes, *args: Any, **kwargs: Any) -> bytes:
            self.fed += len(data)
            return real_compress(data, *args, **kwargs)

        counter = self

        class Packer:
            def __init__(self, inner: Any) -> None:
                self.inner = inner

            def compress(self, data: bytes) -> bytes:
                counter.fed += len(data)
                return bytes(self.inner.compress(data))

            def copy(self) -> Packer:
                return Packer(self.inner.copy())

            def flush(self) -> bytes:
                return bytes(self.inner.flush())

        monkeypatch.setattr(page_module.gzip, "compress", compress)
        monkeypatch.setattr(
            page_module.zlib, "compressobj", lambda *a, **k: Packer(real_object(*a, **k))
        )


def _state_json(page: str) -> str:
    return json.dumps(unpack_state(page), sort_keys=True)


def test_a_page_over_budget_with_the_toggles_is_packed_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rec = recording()
    heavy = replay_html(rec, compress=True, explain=True)
    light = replay_html(rec, compress=True, explain=False)
    assert {"memory", "health"} <= set(unpack_state(heavy)["data"])
    nodes = len(rec.graph.nodes)
    between = (len(heavy.encode("utf-8")) + len(light.encode("utf-8"))) // (2 * nodes)
    monkeypatch.setattr(page_module, "PAGE_BYTES_PER_NODE", between)
    counting = _Counting(monkeypatch)
    chosen = replay_html(rec, compress=True)
    assert _state_json(chosen) == _state_json(light)  # the toggles left out, nothing else
    # the JSON of the page without the toggles, plus the toggles' own: compressed once
    toggles = {k: unpack_state(heavy)["data"][k] for k in ("memory", "health")}
    once = len(json.dumps(unpack_state(light), ensure_ascii=False, separators=(",", ":")))
    once += len(json.dumps(toggles, ensure_ascii=False, separators=(",", ":")))
    # once at the quick level (over budget), once at the tight one (still over: no toggles)
    assert counting.fed < 2.2 * once


def test_a_page_within_budget_keeps_the_toggles_and_the_same_data(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rec = recording()
    heavy = replay_html(rec, compress=True, explain=True)
    chosen = replay_html(rec, compress=True)
    assert _state_json(chosen) == _state_json(heavy)
    assert "gzip+7bit" in chosen
    monkeypatch.setattr(page_module, "PAGE_BYTES_PER_NODE", 1)  # over budget either way
    assert _state_json(replay_html(rec, compress=True)) == _state_json(heavy)
