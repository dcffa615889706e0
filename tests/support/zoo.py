"""The model zoo: architectures as practitioners build them, small, with random weights.

Each entry builds a model from a configuration (no weights are downloaded) and a function
that runs one fresh forward pass and returns the scalar loss. The library-built models
(Hugging Face ``transformers``, ``diffusers``, PyTorch Geometric: ``pyproject.toml``'s
``bench`` dependency group) are skipped where their library is missing; the hand-built
ones below need torch alone, so the slow tests always run them:

- a mixture of experts with top-k routing (tokens gathered per expert, ``index_add_`` back),
- a graph network that passes messages with ``index_add``/``scatter_add``,
- a custom ``autograd.Function`` inside ``torch.utils.checkpoint`` blocks,
- a state-space sequence model (an S4D-style kernel applied by FFT convolution),
- an LSTM language model with tied weights that computes its loss inside ``forward``.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from gradviz.model.recording import Recording
from gradviz.render.watched import collapsed_members
from gradviz.replay.modules import view_collapse, view_options

Loss = Callable[[], torch.Tensor]


@dataclass(frozen=True)
class ZooModel:
    """One architecture: its name, what it shows, where it comes from, and its builder."""

    name: str
    what: str
    library: str  # "torch" (hand-built here), "transformers", "diffusers" or "torch_geometric"
    build: Callable[[], tuple[nn.Module, Loss]]

    def available(self) -> bool:
        return self.library == "torch" or importlib.util.find_spec(self.library) is not None


# -- hand-built: torch alone -------------------------------------------------------------------
class Expert(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.up = nn.Linear(width, 2 * width)
        self.down = nn.Linear(2 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))


class TopKMoE(nn.Module):
    """Switch/Mixtral-style routing: each token goes to its ``k`` best experts, weighted by
    the renormalised router probabilities; outputs are summed back with ``index_add_``."""

    def __init__(self, width: int, experts: int = 4, k: int = 2) -> None:
        super().__init__()
        self.router = nn.Linear(width, experts, bias=False)
        self.experts = nn.ModuleList(Expert(width) for _ in range(experts))
        self.k = k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = x.reshape(-1, x.shape[-1])
        weights, chosen = torch.softmax(self.router(tokens), dim=-1).topk(self.k, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        out = torch.zeros_like(tokens)
        for index, expert in enumerate(self.experts):
            rows, slot = torch.where(chosen == index)
            if rows.numel() == 0:
                continue
            part = expert(tokens[rows]) * weights[rows, slot].unsqueeze(-1)
            out = out.index_add(0, rows, part)
        return out.view_as(x)


class MoEBlock(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, 2, batch_first=True)
        self.norm2 = nn.LayerNorm(width)
        self.moe = TopKMoE(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.moe(self.norm2(x))


class MoELm(nn.Module):
    def __init__(self, vocab: int = 64, width: int = 16, layers: int = 4) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.blocks = nn.ModuleList(MoEBlock(width) for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def make_moe() -> tuple[nn.Module, Loss]:
    torch.manual_seed(0)
    model, ids = MoELm(), torch.randint(0, 64, (2, 12))
    return model, lambda: F.cross_entropy(model(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten())


class MessagePassing(nn.Module):
    """A GCN layer by hand: messages along edges, summed per target with ``index_add``,
    normalised by degree (counted with ``scatter_add``)."""

    def __init__(self, features_in: int, features_out: int) -> None:
        super().__init__()
        self.message = nn.Linear(features_in, features_out)
        self.update = nn.Linear(features_in + features_out, features_out)

    def forward(self, x: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
        source, target = edges
        ones = torch.ones(target.shape[0], dtype=x.dtype)
        degree = torch.zeros(x.shape[0], dtype=x.dtype).scatter_add(0, target, ones).clamp(min=1)
        summed = torch.zeros(x.shape[0], self.message.out_features, dtype=x.dtype).index_add(
            0, target, self.message(x)[source]
        )
        return F.relu(self.update(torch.cat([x, summed / degree.unsqueeze(-1)], dim=-1)))


class Gnn(nn.Module):
    def __init__(self, features: int = 8, hidden: int = 16, layers: int = 3) -> None:
        super().__init__()
        sizes = [features] + [hidden] * layers
        self.layers = nn.ModuleList(MessagePassing(a, b) for a, b in itertools.pairwise(sizes))
        self.readout = nn.Linear(hidden, 2)

    def forward(self, x: torch.Tensor, edges: torch.Tensor, graph: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, edges)
        pooled = torch.zeros(int(graph.max()) + 1, x.shape[-1]).index_add(0, graph, x)
        return self.readout(pooled)


def make_gnn() -> tuple[nn.Module, Loss]:
    torch.manual_seed(0)
    nodes = 24
    x = torch.randn(nodes, 8)
    edges = torch.randint(0, nodes, (2, 64))
    graph = torch.arange(nodes) // 12  # two graphs of 12 nodes
    model = Gnn()
    return model, lambda: F.cross_entropy(model(x, edges, graph), torch.tensor([0, 1]))


class ScaledSwish(torch.autograd.Function):
    """``x * sigmoid(beta * x)`` with its own backward (saves only ``x`` and ``beta``)."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor, beta: torch.Tensor):  # type: ignore[override]
        ctx.save_for_backward(x, beta)
        return x * torch.sigmoid(beta * x)

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor):  # type: ignore[override]
        x, beta = ctx.saved_tensors  # type: ignore[attr-defined]
        s = torch.sigmoid(beta * x)
        ds = s * (1 - s)
        grad_x = grad * (s + x * beta * ds)
        grad_beta = (grad * x * x * ds).sum().reshape(beta.shape)
        return grad_x, grad_beta


class SwishBlock(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 2 * width)
        self.beta = nn.Parameter(torch.ones(1))
        self.fc2 = nn.Linear(2 * width, width)

    def inner(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(ScaledSwish.apply(self.fc1(self.norm(x)), self.beta))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + checkpoint(self.inner, x, use_reentrant=False)


class CheckpointedNet(nn.Module):
    def __init__(self, width: int = 16, layers: int = 6) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(SwishBlock(width) for _ in range(layers))
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def make_checkpointed() -> tuple[nn.Module, Loss]:
    torch.manual_seed(0)
    model, x = CheckpointedNet(), torch.randn(8, 16)
    return model, lambda: model(x).square().mean()


class S4DKernel(nn.Module):
    """A diagonal state-space layer's convolution kernel: ``K[t] = Re(C exp(t dt A) B)``."""

    def __init__(self, channels: int, state: int = 8) -> None:
        super().__init__()
        self.log_dt = nn.Parameter(torch.linspace(math.log(1e-3), math.log(1e-1), channels))
        self.log_a_real = nn.Parameter(torch.log(0.5 * torch.ones(channels, state)))
        self.a_imag = nn.Parameter(math.pi * torch.arange(state).float().expand(channels, -1))
        self.c = nn.Parameter(torch.randn(channels, state, 2) * 0.5)

    def forward(self, length: int) -> torch.Tensor:
        dt = self.log_dt.exp().unsqueeze(-1)
        a = torch.complex(-self.log_a_real.exp(), self.a_imag)
        c = torch.view_as_complex(self.c) * (torch.exp(dt * a) - 1.0) / a
        powers = (dt * a).unsqueeze(-1) * torch.arange(length)
        return 2 * torch.einsum("cn,cnl->cl", c, torch.exp(powers)).real


class S4DBlock(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(channels)
        self.kernel = S4DKernel(channels)
        self.skip = nn.Parameter(torch.randn(channels))
        self.out = nn.Linear(channels, 2 * channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        length = x.shape[1]
        u = self.norm(x).transpose(1, 2)  # (batch, channels, length)
        k = self.kernel(length)
        y = torch.fft.irfft(torch.fft.rfft(u, n=2 * length) * torch.fft.rfft(k, n=2 * length))
        y = y[..., :length] + u * self.skip.unsqueeze(-1)
        return x + F.glu(self.out(F.gelu(y).transpose(1, 2)), dim=-1)


class S4DModel(nn.Module):
    def __init__(self, features: int = 4, channels: int = 16, layers: int = 4) -> None:
        super().__init__()
        self.encoder = nn.Linear(features, channels)
        self.layers = nn.ModuleList(S4DBlock(channels) for _ in range(layers))
        self.decoder = nn.Linear(channels, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.encoder(x)
        for layer in self.layers:
            x = layer(x)
        return self.decoder(x.mean(dim=1))


def make_s4d() -> tuple[nn.Module, Loss]:
    torch.manual_seed(0)
    model, x = S4DModel(), torch.randn(2, 32, 4)
    return model, lambda: F.cross_entropy(model(x), torch.tensor([0, 2]))


class LstmLm(nn.Module):
    """PyTorch's word-language-model recipe: embedding, a two-layer LSTM and a decoder
    whose weight *is* the embedding's; with targets, ``forward`` returns the loss."""

    def __init__(self, vocab: int = 64, width: int = 16) -> None:
        super().__init__()
        self.encoder = nn.Embedding(vocab, width)
        self.rnn = nn.LSTM(width, width, num_layers=2, batch_first=True)
        self.decoder = nn.Linear(width, vocab)
        self.decoder.weight = self.encoder.weight  # tied

    def forward(self, ids: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        out, _ = self.rnn(self.encoder(ids))
        logits = self.decoder(out)
        if targets is None:
            return logits
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def make_lstm_lm() -> tuple[nn.Module, Loss]:
    torch.manual_seed(0)
    model, ids = LstmLm(), torch.randint(0, 64, (2, 16))
    return model, lambda: model(ids[:, :-1], ids[:, 1:])


# -- library-built: from configurations, random weights ---------------------------------------
def _ids(vocab: int, shape: tuple[int, ...]) -> torch.Tensor:
    return torch.randint(0, vocab, shape, generator=torch.Generator().manual_seed(1))


def make_hf_vit() -> tuple[nn.Module, Loss]:
    from transformers import ViTConfig, ViTForImageClassification

    torch.manual_seed(0)
    config = ViTConfig(
        hidden_size=32,
        num_hidden_layers=4,
        num_attention_heads=2,
        intermediate_size=64,
        image_size=32,
        patch_size=8,
        num_labels=10,
    )
    model = ViTForImageClassification(config)
    images, labels = torch.randn(2, 3, 32, 32), torch.tensor([1, 7])
    return model, lambda: model(pixel_values=images, labels=labels).loss


def make_hf_convnext() -> tuple[nn.Module, Loss]:
    from transformers import ConvNextConfig, ConvNextForImageClassification

    torch.manual_seed(0)
    config = ConvNextConfig(hidden_sizes=[8, 16, 32, 64], depths=[2, 2, 4, 2], num_labels=10)
    model = ConvNextForImageClassification(config)
    images, labels = torch.randn(2, 3, 32, 32), torch.tensor([3, 5])
    return model, lambda: model(pixel_values=images, labels=labels).loss


def make_hf_bert() -> tuple[nn.Module, Loss]:
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=4,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
        num_labels=3,
    )
    model = BertForSequenceClassification(config)
    ids, labels = _ids(100, (2, 12)), torch.tensor([0, 2])
    return model, lambda: model(input_ids=ids, labels=labels).loss


def make_hf_t5() -> tuple[nn.Module, Loss]:
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    config = T5Config(
        vocab_size=100,
        d_model=32,
        d_kv=16,
        d_ff=64,
        num_layers=3,
        num_decoder_layers=3,
        num_heads=2,
        decoder_start_token_id=0,
        pad_token_id=0,
    )
    model = T5ForConditionalGeneration(config)
    ids, labels = _ids(100, (2, 10)), _ids(100, (2, 6)) + 1
    return model, lambda: model(input_ids=ids, labels=labels.clamp(max=99)).loss


def _llama(layers: int) -> Callable[[], tuple[nn.Module, Loss]]:
    def make() -> tuple[nn.Module, Loss]:
        from transformers import LlamaConfig, LlamaForCausalLM

        torch.manual_seed(0)
        config = LlamaConfig(
            vocab_size=100,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=layers,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=64,
        )
        model = LlamaForCausalLM(config)
        ids = _ids(100, (1, 12))
        return model, lambda: model(input_ids=ids, labels=ids).loss

    return make


def make_hf_mixtral() -> tuple[nn.Module, Loss]:
    from transformers import MixtralConfig, MixtralForCausalLM

    torch.manual_seed(0)
    config = MixtralConfig(
        vocab_size=100,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_local_experts=4,
        num_experts_per_tok=2,
        max_position_embeddings=64,
    )
    model = MixtralForCausalLM(config)
    ids = _ids(100, (1, 12))
    return model, lambda: model(input_ids=ids, labels=ids).loss


def make_hf_mamba() -> tuple[nn.Module, Loss]:
    from transformers import MambaConfig, MambaForCausalLM

    torch.manual_seed(0)
    config = MambaConfig(
        vocab_size=100, hidden_size=32, state_size=8, num_hidden_layers=2, expand=2
    )
    model = MambaForCausalLM(config)
    ids = _ids(100, (1, 12))
    return model, lambda: model(input_ids=ids, labels=ids).loss


def make_hf_gpt2() -> tuple[nn.Module, Loss]:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=100, n_positions=32, n_embd=32, n_layer=4, n_head=2)
    model = GPT2LMHeadModel(config)
    ids = _ids(100, (1, 12))
    return model, lambda: model(input_ids=ids, labels=ids).loss


def make_diffusers_unet() -> tuple[nn.Module, Loss]:
    from diffusers import UNet2DModel

    torch.manual_seed(0)
    model = UNet2DModel(
        sample_size=16,
        in_channels=3,
        out_channels=3,
        layers_per_block=1,
        block_out_channels=(16, 32),
        norm_num_groups=8,
        down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"),
    )
    clean, noise = torch.randn(2, 3, 16, 16), torch.randn(2, 3, 16, 16)
    steps = torch.tensor([10, 500])
    alpha = torch.cos(steps.float() / 1000 * math.pi / 2).view(-1, 1, 1, 1)
    noisy = alpha * clean + (1 - alpha**2).sqrt() * noise
    return model, lambda: F.mse_loss(model(noisy, steps).sample, noise)


class PygGcn(nn.Module):
    def __init__(self, features: int = 8, hidden: int = 16, classes: int = 3) -> None:
        super().__init__()
        from torch_geometric.nn import GCNConv

        self.conv1 = GCNConv(features, hidden)
        self.conv2 = GCNConv(hidden, hidden)
        self.conv3 = GCNConv(hidden, classes)

    def forward(self, x: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x, edges))
        x = F.relu(self.conv2(x, edges))
        return self.conv3(x, edges)


def make_pyg_gcn() -> tuple[nn.Module, Loss]:
    torch.manual_seed(0)
    model, x = PygGcn(), torch.randn(30, 8)
    edges = torch.randint(0, 30, (2, 90), generator=torch.Generator().manual_seed(2))
    labels = torch.randint(0, 3, (30,), generator=torch.Generator().manual_seed(3))
    return model, lambda: F.cross_entropy(model(x, edges), labels)


ZOO: list[ZooModel] = [
    ZooModel("vit", "vision transformer (ViT), loss in forward", "transformers", make_hf_vit),
    ZooModel(
        "convnext", "modern CNN (ConvNeXt), loss in forward", "transformers", make_hf_convnext
    ),
    ZooModel("bert", "encoder (BERT) classifier, loss in forward", "transformers", make_hf_bert),
    ZooModel("t5", "encoder-decoder (T5), loss in forward", "transformers", make_hf_t5),
    ZooModel("llama-4", "Llama-style decoder, 4 layers", "transformers", _llama(4)),
    ZooModel("llama-24", "Llama-style decoder, 24 layers", "transformers", _llama(24)),
    ZooModel("gpt2", "GPT-2 decoder, loss in forward", "transformers", make_hf_gpt2),
    ZooModel(
        "mixtral", "mixture of experts, top-2 of 4 (Mixtral)", "transformers", make_hf_mixtral
    ),
    ZooModel("mamba", "state-space model (Mamba)", "transformers", make_hf_mamba),
    ZooModel("unet", "diffusion UNet (UNet2DModel)", "diffusers", make_diffusers_unet),
    ZooModel("pyg-gcn", "graph network (PyG GCNConv, scatter)", "torch_geometric", make_pyg_gcn),
    ZooModel("moe", "mixture of experts, top-2 routing, index_add", "torch", make_moe),
    ZooModel("gnn", "graph network, index_add/scatter_add", "torch", make_gnn),
    ZooModel(
        "checkpoint-fn", "custom autograd.Function under checkpoint", "torch", make_checkpointed
    ),
    ZooModel("s4d", "state-space model, FFT convolution", "torch", make_s4d),
    ZooModel("lstm-lm", "LSTM LM, tied weights, loss in forward", "torch", make_lstm_lm),
]


def zoo(only: str = "all") -> list[ZooModel]:
    """The zoo's models whose library is installed (names containing ``only``'s parts)."""
    models = [m for m in ZOO if m.available()]
    if only != "all":
        wanted = [part.strip().lower() for part in only.split(",") if part.strip()]
        models = [m for m in models if any(part in m.name for part in wanted)]
    return models


_NODE = re.compile(r'^\s*\w+ \[id="([^"]+)"')


def drawn_things(dot: str) -> list[str]:
    """The ids of the nodes a view's DOT draws (module boxes, ops, tensors), legend aside."""
    return [
        m.group(1)
        for line in dot.splitlines()
        if (m := _NODE.match(line)) and "_legend" not in m.group(1)
    ]


def first_view(recording: Recording, view: str) -> tuple[int, int]:
    """How many things a page's first ``view`` draws, and how many backward nodes its
    biggest module box holds (0 in a view without boxes)."""
    graph = recording.graph
    things = len(drawn_things(graph.to_dot(**view_options(view))))
    if not view.startswith("collapsed-"):
        return things, 0
    boxes = collapsed_members(graph, view_collapse(view))
    return things, max((len(members) for members in boxes.values()), default=0)
