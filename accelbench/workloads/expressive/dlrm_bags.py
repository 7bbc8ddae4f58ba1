"""The ``dlrm-bags`` workload: a DLRM-style recommender built on embedding bags.

Each sample holds dense features and, for every sparse feature (table), a bag of categorical ids of its
own length (0 to ``2 * mean_bag`` ids, Zipf-distributed so popular rows repeat). The ids of all tables are
one flat int64 tensor of global row numbers (the "linearized" layout of FBGEMM's table-batched
embeddings) and ``offsets`` says where each table's bag starts: the model looks them up with one
``EmbeddingBag`` (sum pooling) over the concatenated tables. A bottom MLP embeds the dense features,
the pairwise dot products of all embeddings are the feature interaction (upper triangle gathered by
index), and a top MLP gives the click logits of several tasks. The work is sparse, irregular lookups;
the matmuls are small.

Inputs: ``dense`` ``[1, dense]`` float32, ``indices`` ``[ids]`` int64 (fixed total count per size),
``offsets`` ``[tables]`` int64. Output: logits ``[1, tasks]``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from accelbench.workloads.base import Inputs
from accelbench.workloads.expressive._base import ExpressiveWorkload, standard_normal_


@dataclass(frozen=True, slots=True)
class DlrmShape:
    """Dimensions of one recommender size."""

    dense: int
    tables: int
    rows: int
    """Rows per table."""
    dim: int
    mean_bag: int
    hidden: int
    tasks: int

    @property
    def ids(self) -> int:
        """Total ids per sample, over all tables."""
        return self.tables * self.mean_bag


SHAPES = {
    "tiny": DlrmShape(dense=13, tables=8, rows=1000, dim=16, mean_bag=4, hidden=32, tasks=8),
    "standard": DlrmShape(dense=13, tables=26, rows=20000, dim=64, mean_bag=8, hidden=256, tasks=8),
}
"""13 dense and 26 sparse features as in the Criteo data set DLRM is benchmarked on."""


def mlp(dims: list[int]) -> nn.Sequential:
    """Linear layers with ReLU between them (none after the last)."""
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(itertools.pairwise(dims)):
        layers.append(nn.Linear(a, b))
        if i < len(dims) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class Dlrm(nn.Module):
    """Bottom MLP, embedding bags, pairwise dot interaction, top MLP."""

    def __init__(self, shape: DlrmShape) -> None:
        super().__init__()
        self.bags = nn.EmbeddingBag(shape.tables * shape.rows, shape.dim, mode="sum")
        self.bottom = mlp([shape.dense, shape.hidden, shape.dim])
        features = shape.tables + 1
        rows, cols = torch.triu_indices(features, features, offset=1)
        self.pairs: torch.Tensor
        self.register_buffer("pairs", rows * features + cols, persistent=True)
        self.top = mlp([shape.dim + len(rows), shape.hidden, shape.tasks])

    def forward(self, dense: torch.Tensor, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        """Click logits ``[1, tasks]``."""
        bottom = self.bottom(dense)
        pooled = self.bags(indices, offsets)
        embeddings = torch.cat([bottom, pooled], dim=0)
        interactions = (embeddings @ embeddings.T).flatten().index_select(0, self.pairs)
        return self.top(torch.cat([bottom, interactions.unsqueeze(0)], dim=1))


def random_bags(rng: np.random.Generator, shape: DlrmShape) -> tuple[np.ndarray, np.ndarray]:
    """Global ids ``[ids]`` and bag starts ``[tables]``: bag sizes vary, their sum is ``shape.ids``."""
    cuts = np.sort(rng.integers(0, shape.ids + 1, size=shape.tables - 1))
    offsets = np.concatenate([[0], cuts]).astype(np.int64)
    sizes = np.diff(np.concatenate([offsets, [shape.ids]]))
    local = np.minimum(rng.zipf(1.3, size=shape.ids) - 1, shape.rows - 1)
    table = np.repeat(np.arange(shape.tables), sizes)
    return (table * shape.rows + local).astype(np.int64), offsets


class DlrmBags(ExpressiveWorkload[DlrmShape, Dlrm]):
    """DLRM-style recommender: embedding bags with offsets, MLPs and dot interaction."""

    name = "dlrm-bags"
    task = "recommendation"
    shapes = SHAPES
    sample_stream = 0x6A02
    weight_scale = 1.5

    def input_names(self) -> tuple[str, ...]:
        """Dense features, flat sparse ids and bag offsets."""
        return ("dense", "indices", "offsets")

    def network(self, shape: DlrmShape) -> Dlrm:
        """The recommender."""
        return Dlrm(shape)

    def set_weights(self, model: Dlrm, seed: int) -> None:
        """Embeddings N(0, 1), so bags of different ids differ clearly."""
        standard_normal_(model.bags.weight, seed)

    def draw(self, shape: DlrmShape, rng: np.random.Generator) -> Inputs:
        """N(0, 1) dense features and Zipf ids in bags of random sizes."""
        dense = rng.standard_normal((1, shape.dense)).astype(np.float32)
        indices, offsets = random_bags(rng, shape)
        return (dense, indices, offsets)

    def batch_reason(self, size: str) -> str | None:
        """Always a reason: indices and offsets are flat per sample, and the model interacts rows."""
        return (
            "indices and offsets are flat per sample (offsets index that sample's ids) and the "
            "interaction multiplies all embeddings of the sample together; concatenating on axis 0 "
            "would mix samples"
        )

    def describe(self, size: str) -> dict[str, str]:
        """Shape facts at ``size``."""
        shape = self.shape(size)
        return {
            "architecture": f"DLRM: {shape.tables} embedding tables x {shape.rows} rows x {shape.dim}, "
            f"sum bags, MLPs of width {shape.hidden}, pairwise dot interaction",
            "input": f"dense [1, {shape.dense}] float32, indices [{shape.ids}] int64, "
            f"offsets [{shape.tables}] int64 (bags of random size)",
            "output": f"click logits [1, {shape.tasks}]",
            "weights": "random, seeded by the run seed",
        }
