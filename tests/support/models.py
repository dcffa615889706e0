"""Small real models for the recording tests, built deterministically from a seed."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

Build = Callable[[], tuple[torch.Tensor, dict[str, torch.Tensor]]]


def mlp() -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    x = torch.randn(5, 4)
    target = torch.randint(0, 3, (5,))
    out = model(x)
    loss = nn.functional.cross_entropy(out, target)
    return loss, {**dict(model.named_parameters()), "out": out}


def conv_net() -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    torch.manual_seed(1)
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(4 * 4 * 4, 2),
    )
    x = torch.randn(2, 3, 8, 8)
    out = model(x)
    loss = out.square().mean()
    return loss, {**dict(model.named_parameters()), "out": out}


def transformer_layer() -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    torch.manual_seed(2)
    layer = nn.TransformerEncoderLayer(
        d_model=16, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True
    )
    x = torch.randn(2, 5, 16)
    out = layer(x)
    loss = out.pow(2).mean()
    return loss, {**dict(layer.named_parameters()), "out": out}


MODELS: dict[str, Build] = {"mlp": mlp, "conv": conv_net, "transformer": transformer_layer}
