"""The ``dynamic-seq`` workload: an attention encoder fed sequences of a different length every sample.

Sample ``index`` has its own length, drawn between ``min_length`` and ``max_length``: no padding, no
bucketing, the shape of the input changes from call to call as it does in a real serving queue. The
model embeds the tokens, adds sinusoidal positions computed for the actual length, runs pre-norm
self-attention blocks and mean-pools to one vector, so the output shape is fixed. A stack that compiled
for the shape of the first sample must recompile, pad, or fail.

Input: token ids ``[1, length]`` int64 (length varies per sample). Output: embedding ``[1, dim]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from accelbench.workloads.base import Inputs
from accelbench.workloads.expressive._base import ExpressiveWorkload, standard_normal_


@dataclass(frozen=True, slots=True)
class SeqShape:
    """Dimensions of one encoder size."""

    vocab: int
    dim: int
    heads: int
    layers: int
    min_length: int
    max_length: int


SHAPES = {
    "tiny": SeqShape(vocab=500, dim=32, heads=4, layers=1, min_length=5, max_length=40),
    "standard": SeqShape(vocab=30522, dim=256, heads=4, layers=4, min_length=16, max_length=384),
}


class Block(nn.Module):
    """Pre-norm self-attention plus a GELU feed-forward, both residual."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``[1, length, dim]`` -> same shape."""
        length, dim = x.shape[1], x.shape[2]
        q, k, v = self.qkv(self.norm1(x)).reshape(1, length, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(dim // self.heads)
        attended = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(1, length, dim)
        x = x + self.proj(attended)
        return x + self.ff(self.norm2(x))


class Encoder(nn.Module):
    """Token embedding, sinusoidal positions for the actual length, blocks, mean pool."""

    def __init__(self, shape: SeqShape) -> None:
        super().__init__()
        self.dim = shape.dim
        self.embed = nn.Embedding(shape.vocab, shape.dim)
        self.blocks = nn.ModuleList(Block(shape.dim, shape.heads) for _ in range(shape.layers))
        self.norm = nn.LayerNorm(shape.dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Mean-pooled embedding ``[1, dim]`` of a sequence of any length."""
        position = torch.arange(ids.shape[1], dtype=torch.float32).unsqueeze(1)
        rate = torch.exp(torch.arange(0, self.dim, 2, dtype=torch.float32) * (-math.log(1e4) / self.dim))
        angles = position * rate
        positions = torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(1)
        x = self.embed(ids) + positions
        for block in self.blocks:
            x = block(x)
        return self.norm(x).mean(dim=1)


class DynamicSeq(ExpressiveWorkload[SeqShape, Encoder]):
    """Attention encoder with a different sequence length per sample."""

    name = "dynamic-seq"
    task = "text-embedding"
    shapes = SHAPES
    sample_stream = 0x6A05

    def input_names(self) -> tuple[str, ...]:
        """Token ids."""
        return ("input_ids",)

    def network(self, shape: SeqShape) -> Encoder:
        """The encoder."""
        return Encoder(shape)

    def set_weights(self, model: Encoder, seed: int) -> None:
        """Embeddings N(0, 1), LayerNorms identity."""
        standard_normal_(model.embed.weight, seed)
        for module in model.modules():
            if isinstance(module, nn.LayerNorm):
                module.weight.fill_(1.0)
                module.bias.zero_()

    def draw(self, shape: SeqShape, rng: np.random.Generator) -> Inputs:
        """Uniform random ids; the length is drawn per sample (sample 0 included)."""
        length = int(rng.integers(shape.min_length, shape.max_length + 1))
        return (rng.integers(0, shape.vocab, size=(1, length)).astype(np.int64),)

    def batch_reason(self, size: str) -> str | None:
        """Always a reason: sequence lengths differ between samples, which is the point of the workload."""
        shape = self.shape(size)
        return (
            f"sequence length differs per sample ({shape.min_length}..{shape.max_length} tokens, no "
            "padding by design), so samples cannot be concatenated on axis 0"
        )

    def describe(self, size: str) -> dict[str, str]:
        """Shape facts at ``size``."""
        shape = self.shape(size)
        return {
            "architecture": f"pre-norm attention encoder, {shape.layers} blocks, dim {shape.dim}, "
            f"{shape.heads} heads, mean pool",
            "input": f"input_ids [1, length] int64, length {shape.min_length}..{shape.max_length} "
            "drawn per sample",
            "output": f"embedding [1, {shape.dim}]",
            "weights": "random, seeded by the run seed",
        }
