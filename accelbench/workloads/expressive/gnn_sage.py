"""The ``gnn-sage`` workload: GraphSAGE message passing over a seeded irregular graph.

Every sample is its own random graph with a fixed node and edge count (so the input shapes are static)
but an irregular, heavy-tailed degree distribution: edge sources are drawn with power-law weights, so a
few hub nodes send most messages. Each layer gathers the source features of every edge
(``index_select``), scatter-adds them onto the destination nodes (``index_add``), divides by the
in-degree (itself a scatter-add of ones) and mixes with the node's own features: the irregular memory
traffic of graph neural networks, not a dense matmul.

Inputs: node features ``[nodes, features]`` float32 and ``edge_index`` ``[2, edges]`` int64 (row 0 the
sources, row 1 the destinations). Output: node logits ``[nodes, classes]``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from accelbench.workloads.base import Inputs
from accelbench.workloads.expressive._base import ExpressiveWorkload


@dataclass(frozen=True, slots=True)
class GraphShape:
    """Dimensions of one graph size."""

    nodes: int
    edges: int
    features: int
    hidden: int
    classes: int
    layers: int


SHAPES = {
    "tiny": GraphShape(nodes=97, edges=613, features=16, hidden=32, classes=7, layers=2),
    "standard": GraphShape(nodes=2708, edges=10556, features=128, hidden=128, classes=7, layers=3),
}
"""``standard`` has the node and edge counts of the Cora citation graph."""


class SageLayer(nn.Module):
    """One GraphSAGE layer with mean aggregation: ``W_self x + W_neigh mean_{j->i} x_j``."""

    def __init__(self, in_dim: int, out_dim: int) -> None:
        super().__init__()
        self.self_linear = nn.Linear(in_dim, out_dim)
        self.neigh_linear = nn.Linear(in_dim, out_dim, bias=False)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """Aggregate neighbour features along ``edge_index`` (gather, scatter-add, mean)."""
        source, target = edge_index[0], edge_index[1]
        messages = x.index_select(0, source)
        summed = torch.zeros_like(x).index_add(0, target, messages)
        ones = torch.ones(target.shape[0], 1, dtype=x.dtype)
        degree = torch.zeros(x.shape[0], 1, dtype=x.dtype).index_add(0, target, ones)
        mean = summed / degree.clamp(min=1.0)
        return self.self_linear(x) + self.neigh_linear(mean)


class GraphSage(nn.Module):
    """Stacked SAGE layers with ReLU in between; the last layer gives class logits."""

    def __init__(self, shape: GraphShape) -> None:
        super().__init__()
        dims = [shape.features] + [shape.hidden] * (shape.layers - 1) + [shape.classes]
        self.layers = nn.ModuleList(SageLayer(a, b) for a, b in itertools.pairwise(dims))

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """Node logits ``[nodes, classes]``."""
        for i, layer in enumerate(self.layers):
            x = layer(x, edge_index)
            if i < len(self.layers) - 1:
                x = torch.relu(x)
        return x


def random_graph(rng: np.random.Generator, nodes: int, edges: int) -> np.ndarray:
    """``[2, edges]`` int64 edge list with power-law source weights (hubs) and uniform destinations."""
    weights = 1.0 / np.arange(1, nodes + 1) ** 0.8
    order = rng.permutation(nodes)
    source = order[rng.choice(nodes, size=edges, p=weights / weights.sum())]
    target = rng.integers(0, nodes, size=edges)
    return np.stack([source, target]).astype(np.int64)


class GnnSage(ExpressiveWorkload[GraphShape, GraphSage]):
    """GraphSAGE (mean aggregation) on a seeded power-law graph per sample."""

    name = "gnn-sage"
    task = "graph-node-classification"
    shapes = SHAPES
    sample_stream = 0x6A01
    weight_scale = 1.5

    def input_names(self) -> tuple[str, ...]:
        """Node features and the edge list."""
        return ("features", "edge_index")

    def network(self, shape: GraphShape) -> GraphSage:
        """The GraphSAGE network."""
        return GraphSage(shape)

    def draw(self, shape: GraphShape, rng: np.random.Generator) -> Inputs:
        """A random graph and N(0, 1) node features."""
        features = rng.standard_normal((shape.nodes, shape.features)).astype(np.float32)
        return (features, random_graph(rng, shape.nodes, shape.edges))

    def batch_reason(self, size: str) -> str | None:
        """Always a reason: a sample is a whole graph, so its axis 0 holds nodes, not a batch row."""
        return (
            "a sample is a whole graph (axis 0 of features holds its nodes, edge_index is [2, edges]); "
            "batching graphs needs a disjoint union with shifted node ids, not a concatenation"
        )

    def describe(self, size: str) -> dict[str, str]:
        """Shape facts at ``size``."""
        shape = self.shape(size)
        return {
            "architecture": f"GraphSAGE mean aggregation, {shape.layers} layers, hidden {shape.hidden}",
            "input": f"features [{shape.nodes}, {shape.features}] float32, edge_index [2, {shape.edges}] "
            "int64 (seeded power-law graph per sample)",
            "output": f"node logits [{shape.nodes}, {shape.classes}]",
            "weights": "random, seeded by the run seed",
        }
