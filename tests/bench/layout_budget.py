"""Wall time of a saved page and of ``trace(loss).svg()`` for the T5-, UNet- and
Llama-shaped models (``tests.shaped_models``), and the GradvizWarnings they gave.

    python -m tests.bench.layout_budget [t5 unet llama22 ...]
"""

from __future__ import annotations

import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F

import gradviz
from tests.support.shaped_models import CausalLm, make_t5, make_unet


def make_llama22():  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    model, ids = CausalLm(), torch.randint(0, 50, (2, 8))
    model.model.layers.extend(type(model.model.layers[0])() for _ in range(18))
    return model, lambda: F.cross_entropy(model(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten())


MAKERS = {"t5": make_t5, "unet": make_unet, "llama22": make_llama22}


def main(names: list[str]) -> None:
    for name in names or list(MAKERS):
        model, loss = MAKERS[name]()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            gradviz.trace(loss()).svg()
            traced = time.perf_counter() - start
            with gradviz.watch(model) as w:
                value = loss()
            rec = w.record(value)
            with tempfile.TemporaryDirectory() as folder:
                start = time.perf_counter()
                rec.save(Path(folder) / "page.html")
                saved = time.perf_counter() - start
        told = [str(c.message)[:70] for c in caught if "Gradviz" in c.category.__name__]
        print(
            f"{name}: {len(rec.graph.nodes)} nodes, "
            f"trace().svg() {traced:.1f} s, save {saved:.1f} s"
        )
        for line in told:
            print(f"    warned: {line}")


if __name__ == "__main__":
    main(sys.argv[1:])
