"""Parameters are named by their module path wherever the watched model has one: a token
a model registers on itself (a ViT's ``class_token``) and reads through a local variable in
``forward`` reads ``class_token``, not ``<variable>.class_token``.

Expected names come from ``named_parameters()`` itself; buffers stay unnamed (undrawn).
"""

from __future__ import annotations

import pytest
import torch

import gradviz


class _TokenModel(torch.nn.Module):
    """What a ViT does: a parameter on the model itself, used via a local variable, beside
    submodules; a buffer read the same way."""

    def __init__(self) -> None:
        super().__init__()
        self.class_token = torch.nn.Parameter(torch.zeros(1, 1, 4))
        self.proj = torch.nn.Linear(4, 4)
        self.head = torch.nn.Linear(4, 2)
        self.register_buffer("scale", torch.full((4,), 2.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        cls = self.class_token
        scale = self.scale
        x = self.proj(x) * scale
        x = torch.cat([cls.expand(n, -1, -1), x], dim=1)
        return self.head(x[:, 0])


def _named(w: gradviz.Watch) -> dict[str, torch.Tensor | None]:
    """Name -> the live tensor the watch gave it to (parameters and buffers included)."""
    return {t.name: w.tensor(t.id) for t in w.forward.tensors if t.name}


def test_a_parameter_the_model_registers_on_itself_is_named_by_its_path() -> None:
    torch.manual_seed(0)
    m = _TokenModel()
    x = torch.randn(2, 3, 4)
    with gradviz.watch(m) as w:
        loss = m(x).sum()
    graph = w.trace(loss)
    leaves = {t.name for t in graph.tensors if t.role is gradviz.Role.LEAF}
    assert leaves == {name for name, _ in m.named_parameters()}
    assert "class_token" in leaves and "m.class_token" not in leaves
    found = _named(w)
    for name, tensor in m.named_parameters():
        assert found[name] is tensor


def test_a_buffer_stays_unnamed_and_undrawn() -> None:
    """Buffers are no parameters: naming them would draw every running statistic."""
    m = _TokenModel()
    with gradviz.watch(m) as w:
        m(torch.randn(2, 3, 4)).sum()
    assert all(tensor is not m.scale for tensor in _named(w).values())


def test_without_a_model_argument_the_paths_win_too() -> None:
    model = _TokenModel()
    with gradviz.watch() as w:
        model(torch.randn(2, 3, 4)).sum()
    found = _named(w)
    assert found["class_token"] is model.class_token
    assert found["proj.weight"] is model.proj.weight


def test_a_single_layer_still_says_whose_weight_it_is() -> None:
    layer = torch.nn.Linear(2, 2)
    with gradviz.watch(layer) as w:
        layer(torch.ones(2))
    names = {t.name for t in w.forward.tensors if t.name_source == "param"}
    assert names == {"layer.weight", "layer.bias"}


def test_torchvision_vit_class_token() -> None:
    models = pytest.importorskip("torchvision.models")
    vit = models.VisionTransformer(
        image_size=16, patch_size=8, num_layers=1, num_heads=1, hidden_dim=8, mlp_dim=8
    )
    with gradviz.watch(vit) as w:
        loss = vit(torch.randn(1, 3, 16, 16)).sum()
    graph = w.trace(loss)
    leaves = {t.name for t in graph.tensors if t.role is gradviz.Role.LEAF}
    assert "class_token" in leaves
    assert leaves <= {name for name, _ in vit.named_parameters()}
