"""``gradviz render train.py --training``: the script's whole training loop, watched.

The script is not edited, so gradviz learns of its optimizer only when the script first
calls ``optimizer.step()``: a global step pre-hook then starts ``watch_training`` on that
optimizer (the first step's gradients are still in ``.grad``; its loss is unknown) and the
model is the module in the calling script's scope that holds the optimizer's parameters,
which names them. Every hook is removed when the script ends, also when it fails.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

from gradviz.objects import TrainingRun, TrainingWatch

__all__ = ["ScriptTraining"]

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_GRADVIZ_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class ScriptTraining:
    """Watches the first optimizer the script steps; ``run`` is what was kept (None: the
    script never called ``optimizer.step()``)."""

    def __init__(self, every: int = 1) -> None:
        self.every = every
        self.watch: TrainingWatch | None = None
        self.run: TrainingRun | None = None
        self.model_name: str | None = None

    def _first_step(self, optimizer: torch.optim.Optimizer, *_: Any) -> None:
        if self.watch is not None:
            return None
        self.model_name, model = _owner_module(optimizer)
        self.watch = TrainingWatch(model, optimizer, every=self.every)
        self.run = self.watch.enter_at_step()
        return None

    @contextmanager
    def running(self) -> Iterator[None]:
        handle = register_optimizer_step_pre_hook(self._first_step)
        try:
            yield
        finally:
            handle.remove()
            if self.watch is not None:
                self.watch.__exit__(None, None, None)


def _owner_module(optimizer: torch.optim.Optimizer) -> tuple[str | None, torch.nn.Module | None]:
    """The module in the script's calling scope that holds most of the optimizer's
    parameters (the model), with its name there."""
    wanted = {id(p) for group in optimizer.param_groups for p in group["params"]}
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith((_TORCH_DIR, _GRADVIZ_DIR)):
            break
        frame = frame.f_back
    if frame is None:
        return None, None
    scope = {**frame.f_globals, **frame.f_locals}
    del frame
    best: tuple[int, str | None, torch.nn.Module | None] = (0, None, None)
    for name, value in scope.items():
        if isinstance(value, torch.nn.Module) and not name.startswith("_"):
            held = sum(1 for p in value.parameters() if id(p) in wanted)
            if held > best[0]:
                best = (held, name, value)
    return best[1], best[2]
