"""The ``moe-topk`` workload: a mixture-of-experts layer with data-dependent top-k routing.

A router scores every token against every expert, keeps the ``top_k`` best (``topk``) and renormalises
their weights. Tokens are then really dispatched: for each expert, ``where`` finds the tokens routed to
it (a count known only at run time), ``index_select`` gathers them, the expert MLP runs on just those,
and ``index_add`` scatters the weighted results back. Compute per token is ``top_k`` experts out of
``experts``, and which ones depends on the data -- the sparsity dense compilers must handle.

Input: tokens ``[1, tokens, dim]`` float32. Output: ``[1, tokens, dim]`` (no residual, so a routing
error is not hidden by the input passing through).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from accelbench.workloads.base import Inputs
from accelbench.workloads.expressive._base import ExpressiveWorkload


@dataclass(frozen=True, slots=True)
class MoeShape:
    """Dimensions of one mixture-of-experts size."""

    tokens: int
    dim: int
    hidden: int
    experts: int
    top_k: int


SHAPES = {
    "tiny": MoeShape(tokens=24, dim=32, hidden=64, experts=6, top_k=2),
    "standard": MoeShape(tokens=256, dim=512, hidden=1024, experts=16, top_k=2),
}


class Expert(nn.Module):
    """A two-layer GELU MLP."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``down(gelu(up(x)))``."""
        return self.down(torch.nn.functional.gelu(self.up(x)))


class MixtureOfExperts(nn.Module):
    """Top-k routed experts with real token dispatch (gather, expert, weighted scatter-add)."""

    def __init__(self, shape: MoeShape) -> None:
        super().__init__()
        self.top_k = shape.top_k
        self.router = nn.Linear(shape.dim, shape.experts, bias=False)
        self.experts = nn.ModuleList(Expert(shape.dim, shape.hidden) for _ in range(shape.experts))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Route each token to its ``top_k`` experts and sum their weighted outputs."""
        x = tokens.flatten(0, 1)
        weights, chosen = torch.softmax(self.router(x), dim=-1).topk(self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(x)
        for number, expert in enumerate(self.experts):
            token, slot = torch.where(chosen == number)
            routed = expert(x.index_select(0, token)) * weights[token, slot].unsqueeze(-1)
            out = out.index_add(0, token, routed)
        return out.reshape(tokens.shape)


class MoeTopk(ExpressiveWorkload[MoeShape, MixtureOfExperts]):
    """Mixture of experts, top-k routing with data-dependent dispatch."""

    name = "moe-topk"
    task = "sparse-expert-layer"
    shapes = SHAPES
    sample_stream = 0x6A03

    def input_names(self) -> tuple[str, ...]:
        """One token batch."""
        return ("tokens",)

    def network(self, shape: MoeShape) -> MixtureOfExperts:
        """The mixture-of-experts layer."""
        return MixtureOfExperts(shape)

    def set_weights(self, model: MixtureOfExperts, seed: int) -> None:
        """The router scaled up, so routing decisions have clear margins."""
        model.router.weight.mul_(4.0)

    def draw(self, shape: MoeShape, rng: np.random.Generator) -> Inputs:
        """N(0, 1) tokens."""
        return (rng.standard_normal((1, shape.tokens, shape.dim)).astype(np.float32),)

    def describe(self, size: str) -> dict[str, str]:
        """Shape facts at ``size``."""
        shape = self.shape(size)
        return {
            "architecture": f"{shape.experts} GELU experts ({shape.dim}->{shape.hidden}->{shape.dim}), "
            f"top-{shape.top_k} softmax routing, token dispatch by where/index_select/index_add",
            "input": f"tokens [1, {shape.tokens}, {shape.dim}] float32",
            "output": f"[1, {shape.tokens}, {shape.dim}]",
            "weights": "random, seeded by the run seed",
        }
