"""The benchmark's workloads: each builds a fresh forward pass and returns its loss.

Models are built once (``Workload.model``), and every call of ``Workload.forward()`` runs a
new forward pass, so each measurement gets its own live graph. No torchvision here: the
ResNet-50 bottleneck blocks and the GPT-style decoder are written out by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from gradviz.teaching.lessons import LESSONS
from tests.support.zoo import ZooModel, zoo


@dataclass
class Workload:
    name: str
    forward: Callable[[], torch.Tensor]  # a fresh forward pass: returns the scalar loss
    model: nn.Module | None = None  # the model, for peers that need one (torchlens)
    inputs: tuple[torch.Tensor, ...] = ()
    loss_of: Callable[[torch.Tensor], torch.Tensor] | None = None  # model output -> loss
    kind: str = "model"  # "lesson", "model", "memory" or "synthetic"

    def zero_grad(self) -> None:
        if self.model is not None:
            for param in self.model.parameters():
                param.grad = None


# -- ResNet-50 -----------------------------------------------------------------------------
class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        width = planes
        out = planes * self.expansion
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.downsample: nn.Module | None = None
        if stride != 1 or inplanes != out:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, out, 1, stride=stride, bias=False), nn.BatchNorm2d(out)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return F.relu(y + identity)


class ResNet50(nn.Module):
    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        layers: list[nn.Module] = []
        inplanes = 64
        for planes, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for index in range(blocks):
                layers.append(Bottleneck(inplanes, planes, stride if index == 0 else 1))
                inplanes = planes * Bottleneck.expansion
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(inplanes, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.layers(x)
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


# -- a GPT-style decoder ---------------------------------------------------------------------
class GPT(nn.Module):
    """Token + position embeddings, six pre-norm causal self-attention blocks, an LM head."""

    def __init__(self, vocab: int = 512, d_model: int = 256, layers: int = 6, seq: int = 32):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d_model)
        self.positions = nn.Embedding(seq, d_model)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(
                d_model,
                nhead=8,
                dim_feedforward=4 * d_model,
                dropout=0.0,
                activation="gelu",
                batch_first=True,
                norm_first=True,
            )
            for _ in range(layers)
        )
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1])
        x = self.tokens(ids) + self.positions(positions)
        for block in self.blocks:
            x = block(x, src_mask=self.mask, is_causal=True)
        return self.head(self.norm(x))


def _mlp(layers: int = 100, width: int = 64) -> nn.Module:
    parts: list[nn.Module] = []
    for _ in range(layers):
        parts += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*parts)


# -- synthetic graphs ------------------------------------------------------------------------
def synthetic(nodes: int) -> Callable[[], torch.Tensor]:
    """A residual-style graph with about ``nodes`` backward nodes: blocks of mul/add/tanh with
    a skip connection and a fresh leaf every few blocks, so it is neither a chain nor a tree.
    """
    # one block: 3 MulBackward0, TanhBackward0, 2 AddBackward0 (about 6 nodes with the
    # extra skip every 4th block and an AccumulateGrad per 4 blocks)
    blocks = max(1, round(nodes / 5.5))
    leaves = [torch.full((4,), 0.5 + i * 1e-3, requires_grad=True) for i in range(blocks // 4 + 1)]

    def forward() -> torch.Tensor:
        h = torch.ones(4, requires_grad=True) * 0.1
        for i in range(blocks):
            w = leaves[i // 4]
            h = 0.5 * h + torch.tanh(h * w) + (0.1 * h if i % 4 == 0 else 0.0)
        return h.sum()

    return forward


def build(set_name: str = "all") -> list[Workload]:
    torch.manual_seed(0)
    work: list[Workload] = []
    for item in LESSONS:
        if item.build().gradient is not None:
            continue  # a non-scalar root: the benchmark's loss.backward() needs a scalar

        def lesson_forward(item: object = item) -> torch.Tensor:
            roots = item.build().roots  # type: ignore[attr-defined]
            return roots[0]

        work.append(Workload(f"lesson {item.slug}", lesson_forward, kind="lesson"))

    mlp = _mlp()
    mlp_x = torch.randn(16, 64)
    work.append(
        Workload("MLP 100 layers", lambda: mlp(mlp_x).square().mean(), mlp, (mlp_x,), _mean_sq)
    )

    resnet = ResNet50()
    image = torch.randn(1, 3, 64, 64)
    work.append(
        Workload("ResNet-50 64x64", lambda: _mean_sq(resnet(image)), resnet, (image,), _mean_sq)
    )

    gpt = GPT()
    ids = torch.randint(0, 512, (1, 32), generator=torch.Generator().manual_seed(0))
    work.append(
        Workload("GPT 6x256 seq32", lambda: gpt(ids).square().mean(), gpt, (ids,), _mean_sq)
    )
    # memory: a .sum() loss sends a broadcast gradient; float16 leaves get float16 ones
    work.append(_memory_case("memory: sum loss 4M", torch.zeros(1 << 22), lambda x: (x * 2).sum()))
    work.append(
        _memory_case(
            "memory: float16 4M",
            torch.zeros(1 << 22, dtype=torch.float16),
            lambda x: (x * x).float().square().mean(),
        )
    )
    for size in (1000, 3000, 10000):
        work.append(Workload(f"synthetic {size}", synthetic(size), kind="synthetic"))
    if set_name != "all":  # one name, or several separated by commas
        wanted = [part.strip().lower() for part in set_name.split(",") if part.strip()]
        work = [w for w in work if any(part in w.name.lower() for part in wanted)]
    return work


def _memory_case(
    name: str, values: torch.Tensor, loss: Callable[[torch.Tensor], torch.Tensor]
) -> Workload:
    """One big leaf (a module's parameter, so zero_grad() clears it) and a cheap loss."""
    holder = nn.Module()
    holder.x = nn.Parameter(values)
    return Workload(name, lambda: loss(holder.x), holder, kind="memory")


def _mean_sq(out: torch.Tensor) -> torch.Tensor:
    return out.square().mean()


# -- watched replays (make bench's replay table) -----------------------------------------------
class GRUUnrolled(nn.Module):
    """One GRU cell run over ``steps`` time steps: the same weights at every step."""

    def __init__(self, inputs: int = 16, hidden: int = 32, steps: int = 12) -> None:
        super().__init__()
        self.cell = nn.GRUCell(inputs, hidden)
        self.head = nn.Linear(hidden, 1)
        self.steps = steps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(x.shape[0], self.cell.hidden_size)
        for t in range(self.steps):
            h = self.cell(x[:, t], h)
        return self.head(h)


@dataclass
class ReplayWorkload:
    """A model and its input, for watch() + record() + save("replay.html")."""

    name: str
    model: nn.Module
    inputs: torch.Tensor


def replay_workloads(set_name: str = "all") -> list[ReplayWorkload]:
    torch.manual_seed(0)
    ids = torch.randint(0, 512, (1, 32), generator=torch.Generator().manual_seed(0))
    encoder = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(256, 8, 1024, dropout=0.0, batch_first=True), 6
    )
    work = [
        ReplayWorkload("ResNet-50 64x64", ResNet50(), torch.randn(1, 3, 64, 64)),
        ReplayWorkload("GPT 6x256 seq32", GPT(), ids),
        ReplayWorkload("TransformerEncoder 6x256", encoder, torch.randn(1, 32, 256)),
        ReplayWorkload("GRU cell x12 steps", GRUUnrolled(), torch.randn(4, 12, 16)),
        ReplayWorkload("MLP 2000 layers (10k nodes)", _mlp(2000, 8), torch.randn(2, 8)),
    ]
    if set_name != "all":
        work = [w for w in work if set_name.lower() in w.name.lower()]
    return work


# -- training loops (watch_training's overhead) ------------------------------------------------
@dataclass
class TrainingWorkload:
    """A small model, its optimizer and one training step (zero_grad, forward, backward,
    step), as a user's loop runs it."""

    name: str
    model: nn.Module
    optimizer: torch.optim.Optimizer
    step: Callable[[], None]


def _training(
    name: str, model: nn.Module, optimizer: torch.optim.Optimizer, loss: Callable[[], torch.Tensor]
) -> TrainingWorkload:
    def step() -> None:
        optimizer.zero_grad()
        loss().backward()
        optimizer.step()

    return TrainingWorkload(name, model, optimizer, step)


def training_workloads() -> list[TrainingWorkload]:
    """Small models trained on CPU: an MLP with Adam, a transformer block with AdamW, and
    the zoo's models that need torch alone (each with Adam)."""
    torch.manual_seed(0)
    mlp = nn.Sequential(
        nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)
    )
    x, y = torch.randn(64, 64), torch.randint(0, 10, (64,))
    block = nn.Sequential(
        nn.TransformerEncoderLayer(64, 4, 128, batch_first=True),
        nn.Flatten(),
        nn.Linear(64 * 16, 10),
    )
    tokens, labels = torch.randn(16, 16, 64), torch.randint(0, 10, (16,))
    return [
        _training(
            "MLP 3x256 Adam",
            mlp,
            torch.optim.Adam(mlp.parameters(), lr=1e-3),
            lambda: F.cross_entropy(mlp(x), y),
        ),
        _training(
            "Transformer block AdamW",
            block,
            torch.optim.AdamW(block.parameters(), lr=1e-3),
            lambda: F.cross_entropy(block(tokens), labels),
        ),
        *(_zoo_training(entry) for entry in zoo("all") if entry.library == "torch"),
    ]


def _zoo_training(entry: ZooModel) -> TrainingWorkload:
    torch.manual_seed(0)
    model, loss = entry.build()
    return _training(f"zoo {entry.name} Adam", model, torch.optim.Adam(model.parameters()), loss)
