"""Small models with the module trees of real ones, from plain torch (no downloads): a
BERT-like encoder, a Llama-like decoder, a ViT, a T5-like encoder-decoder with
cross-attention, a UNet-like conv net with skip connections, a deep MLP and a model that
is one block.

Each ``make_*`` returns the model and a function that computes its loss."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

Loss = Callable[[], torch.Tensor]

WIDTH = 16


class Attention(nn.Module):
    def __init__(self, width: int = WIDTH, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(width, width)
        self.key = nn.Linear(width, width)
        self.value = nn.Linear(width, width)
        self.output = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, w = x.shape
        split = (b, t, self.heads, w // self.heads)
        q, k, v = (f(x).view(split).transpose(1, 2) for f in (self.query, self.key, self.value))
        weights = torch.softmax(q @ k.transpose(-1, -2) / (w // self.heads) ** 0.5, dim=-1)
        return self.output((weights @ v).transpose(1, 2).reshape(b, t, w))


class Mlp(nn.Module):
    def __init__(self, width: int = WIDTH) -> None:
        super().__init__()
        self.up = nn.Linear(width, 2 * width)
        self.down = nn.Linear(2 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))


class Layer(nn.Module):
    """A post-norm encoder layer (BERT, ViT)."""

    def __init__(self) -> None:
        super().__init__()
        self.attention = Attention()
        self.norm1 = nn.LayerNorm(WIDTH)
        self.mlp = Mlp()
        self.norm2 = nn.LayerNorm(WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm1(x + self.attention(x))
        return self.norm2(x + self.mlp(x))


class Encoder(nn.Module):
    def __init__(self, layers: int = 6) -> None:
        super().__init__()
        self.layer = nn.ModuleList(Layer() for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layer:
            x = layer(x)
        return x


class Embeddings(nn.Module):
    def __init__(self, vocab: int = 50, positions: int = 8) -> None:
        super().__init__()
        self.word = nn.Embedding(vocab, WIDTH)
        self.position = nn.Embedding(positions, WIDTH)
        self.norm = nn.LayerNorm(WIDTH)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        places = torch.arange(ids.shape[1])
        return self.norm(self.word(ids) + self.position(places))


class Pooler(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.dense = nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(x[:, 0]))


class Bert(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embeddings = Embeddings()
        self.encoder = Encoder()
        self.pooler = Pooler()

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.pooler(self.encoder(self.embeddings(ids)))


class BertClassifier(nn.Module):
    """``bert`` (embeddings, encoder of six layers, pooler) and a classifier head."""

    def __init__(self) -> None:
        super().__init__()
        self.bert = Bert()
        self.classifier = nn.Linear(WIDTH, 3)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.bert(ids))


class RmsNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(WIDTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


class GatedMlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(WIDTH, 2 * WIDTH, bias=False)
        self.up_proj = nn.Linear(WIDTH, 2 * WIDTH, bias=False)
        self.down_proj = nn.Linear(2 * WIDTH, WIDTH, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.input_layernorm = RmsNorm()
        self.self_attn = Attention()
        self.post_attention_layernorm = RmsNorm()
        self.mlp = GatedMlp()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class Decoder(nn.Module):
    def __init__(self, vocab: int = 50, layers: int = 4) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, WIDTH)
        self.layers = nn.ModuleList(DecoderLayer() for _ in range(layers))
        self.norm = RmsNorm()

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


class CausalLm(nn.Module):
    """Llama's tree: ``model`` (embed_tokens, layers, norm) and ``lm_head``."""

    def __init__(self, vocab: int = 50) -> None:
        super().__init__()
        self.model = Decoder(vocab)
        self.lm_head = nn.Linear(WIDTH, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.lm_head(self.model(ids))


class Vit(nn.Module):
    """Patches by a strided conv, a class token and positions, an encoder list, a head."""

    def __init__(self, layers: int = 6) -> None:
        super().__init__()
        self.patch_embed = nn.Conv2d(3, WIDTH, kernel_size=4, stride=4)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, WIDTH))
        self.pos_embed = nn.Parameter(torch.zeros(1, 5, WIDTH))
        self.encoder = Encoder(layers)
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, 10)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        return self.head(self.norm(self.encoder(x))[:, 0])


class CrossAttention(Attention):
    """Queries from the decoder, keys and values from the encoder's output."""

    def forward(self, x: torch.Tensor, memory: torch.Tensor | None = None) -> torch.Tensor:
        if memory is None:
            return super().forward(x)
        b, t, w = x.shape
        heads = self.heads

        def split(y: torch.Tensor) -> torch.Tensor:
            return y.view(y.shape[0], y.shape[1], heads, w // heads).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(memory)), split(self.value(memory))
        weights = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
        return self.output((weights @ v).transpose(1, 2).reshape(b, t, w))


class T5Block(nn.Module):
    """A pre-norm T5 block: self-attention, cross-attention (decoder only), feed-forward."""

    def __init__(self, cross: bool) -> None:
        super().__init__()
        self.self_norm = RmsNorm()
        self.self_attention = CrossAttention()
        self.cross_norm = RmsNorm() if cross else None
        self.cross_attention = CrossAttention() if cross else None
        self.ff_norm = RmsNorm()
        self.ff = GatedMlp()

    def forward(self, x: torch.Tensor, memory: torch.Tensor | None = None) -> torch.Tensor:
        x = x + self.self_attention(self.self_norm(x))
        if self.cross_attention is not None and self.cross_norm is not None:
            x = x + self.cross_attention(self.cross_norm(x), memory)
        return x + self.ff(self.ff_norm(x))


class T5Stack(nn.Module):
    def __init__(self, shared: nn.Embedding, layers: int, cross: bool) -> None:
        super().__init__()
        self.embed_tokens = shared
        self.block = nn.ModuleList(T5Block(cross) for _ in range(layers))
        self.final_layer_norm = RmsNorm()

    def forward(self, ids: torch.Tensor, memory: torch.Tensor | None = None) -> torch.Tensor:
        x = self.embed_tokens(ids)
        for block in self.block:
            x = block(x, memory)
        return self.final_layer_norm(x)


class T5(nn.Module):
    """T5's tree: ``shared`` embedding, ``encoder`` and ``decoder`` stacks, ``lm_head``."""

    def __init__(self, vocab: int = 50, layers: int = 6) -> None:
        super().__init__()
        self.shared = nn.Embedding(vocab, WIDTH)
        self.encoder = T5Stack(self.shared, layers, cross=False)
        self.decoder = T5Stack(self.shared, layers, cross=True)
        self.lm_head = nn.Linear(WIDTH, vocab, bias=False)

    def forward(self, ids: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return self.lm_head(self.decoder(targets, self.encoder(ids)))


class ResBlock(nn.Module):
    def __init__(self, channels_in: int, channels_out: int) -> None:
        super().__init__()
        self.norm1 = nn.GroupNorm(2, channels_in)
        self.conv1 = nn.Conv2d(channels_in, channels_out, 3, padding=1)
        self.norm2 = nn.GroupNorm(2, channels_out)
        self.conv2 = nn.Conv2d(channels_out, channels_out, 3, padding=1)
        self.skip = nn.Conv2d(channels_in, channels_out, 1) if channels_in != channels_out else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.conv2(F.silu(self.norm2(h)))
        return h + (x if self.skip is None else self.skip(x))


class DownBlock(nn.Module):
    def __init__(self, channels_in: int, channels_out: int) -> None:
        super().__init__()
        self.resnets = nn.ModuleList(
            [ResBlock(channels_in, channels_out), ResBlock(channels_out, channels_out)]
        )
        self.downsample = nn.Conv2d(channels_out, channels_out, 3, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        skips = []
        for resnet in self.resnets:
            x = resnet(x)
            skips.append(x)
        return self.downsample(x), skips


class UpBlock(nn.Module):
    def __init__(self, channels_in: int, channels_skip: int, channels_out: int) -> None:
        super().__init__()
        self.resnets = nn.ModuleList(
            [
                ResBlock(channels_in + channels_skip, channels_out),
                ResBlock(channels_out + channels_skip, channels_out),
            ]
        )
        self.upsample = nn.Conv2d(channels_out, channels_out, 3, padding=1)

    def forward(self, x: torch.Tensor, skips: list[torch.Tensor]) -> torch.Tensor:
        x = F.interpolate(x, scale_factor=2.0, mode="nearest")
        for resnet in self.resnets:
            x = resnet(torch.cat([x, skips.pop()], dim=1))
        return self.upsample(x)


class UNet(nn.Module):
    """A diffusion UNet's tree: ``conv_in``, ``down_blocks``, ``mid_block``, ``up_blocks``
    (each fed the down blocks' outputs by skip connections), ``conv_out``."""

    def __init__(self, widths: tuple[int, ...] = (8, 16, 16)) -> None:
        super().__init__()
        self.conv_in = nn.Conv2d(3, widths[0], 3, padding=1)
        ins = (widths[0], *widths[:-1])
        self.down_blocks = nn.ModuleList(DownBlock(i, o) for i, o in zip(ins, widths, strict=True))
        self.mid_block = ResBlock(widths[-1], widths[-1])
        ups = list(reversed(widths))
        self.up_blocks = nn.ModuleList(
            UpBlock(c, o, o) for c, o in zip((widths[-1], *ups[:-1]), ups, strict=True)
        )
        self.conv_out = nn.Conv2d(widths[0], 3, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv_in(x)
        skips: list[list[torch.Tensor]] = []
        for down in self.down_blocks:
            x, kept = down(x)
            skips.append(kept)
        x = self.mid_block(x)
        for up in self.up_blocks:
            x = up(x, skips.pop())
        return self.conv_out(x)


def make_t5() -> tuple[nn.Module, Loss]:
    torch.manual_seed(0)
    model = T5()
    ids, targets = torch.randint(0, 50, (2, 8)), torch.randint(0, 50, (2, 6))
    return model, lambda: F.cross_entropy(
        model(ids, targets[:, :-1]).flatten(0, 1), targets[:, 1:].flatten()
    )


def make_unet() -> tuple[nn.Module, Loss]:
    torch.manual_seed(0)
    model, images = UNet(), torch.randn(2, 3, 16, 16)
    return model, lambda: (model(images) - images).square().mean()


def make_bert() -> tuple[nn.Module, Loss]:
    torch.manual_seed(0)
    model, ids = BertClassifier(), torch.randint(0, 50, (2, 8))
    return model, lambda: F.cross_entropy(model(ids), torch.tensor([0, 2]))


def make_llama() -> tuple[nn.Module, Loss]:
    torch.manual_seed(0)
    model, ids = CausalLm(), torch.randint(0, 50, (2, 8))
    return model, lambda: F.cross_entropy(model(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten())


def make_vit() -> tuple[nn.Module, Loss]:
    torch.manual_seed(0)
    model, images = Vit(), torch.randn(2, 3, 8, 8)
    return model, lambda: F.cross_entropy(model(images), torch.tensor([1, 7]))


def make_deep_mlp() -> tuple[nn.Module, Loss]:
    torch.manual_seed(0)
    model = nn.Sequential(*[m for _ in range(12) for m in (nn.Linear(8, 8), nn.ReLU())])
    x = torch.randn(4, 8)
    return model, lambda: model(x).square().mean()


class OneBlock(nn.Module):
    """No child modules: everything runs in the model's own forward."""

    def __init__(self) -> None:
        super().__init__()
        self.weights = nn.ParameterList(nn.Parameter(torch.randn(8, 8) / 3) for _ in range(30))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for weight in self.weights:
            x = torch.tanh(x @ weight)
        return x


def make_one_block() -> tuple[nn.Module, Loss]:
    torch.manual_seed(0)
    model, x = OneBlock(), torch.randn(4, 8)
    return model, lambda: model(x).square().mean()


MODELS: dict[str, Callable[[], tuple[nn.Module, Loss]]] = {
    "bert": make_bert,
    "llama": make_llama,
    "vit": make_vit,
    "deep_mlp": make_deep_mlp,
    "one_block": make_one_block,
}

# Bigger models, kept out of MODELS (each test that loops over MODELS would lay them out):
# the layout-budget tests use them.
BIG_MODELS: dict[str, Callable[[], tuple[nn.Module, Loss]]] = {"t5": make_t5, "unet": make_unet}
