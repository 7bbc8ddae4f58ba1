"""The ``ssm-scan`` workload: a selective state-space scan (Mamba-style), sequential over time.

For every time step t the input-dependent parameters are computed from x_t (``delta_t`` by softplus,
``B_t`` and ``C_t`` by projection) and the hidden state of every channel is advanced by the recurrence
``h_t = exp(delta_t * A) * h_{t-1} + delta_t * B_t * x_t``; the output is ``y_t = C_t . h_t + D x_t``.
Each step depends on the previous one: a loop-carried recurrence of small elementwise work, the
opposite of a matmul. The projections are batched over time before the scan; the scan itself is a
Python loop over the sequence, which tracing compilers unroll.

Input: ``[1, length, channels]`` float32. Output: ``[1, length, channels]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from accelbench.workloads.base import Inputs
from accelbench.workloads.expressive._base import ExpressiveWorkload


@dataclass(frozen=True, slots=True)
class ScanShape:
    """Dimensions of one scan size."""

    length: int
    channels: int
    state: int


SHAPES = {
    "tiny": ScanShape(length=32, channels=16, state=8),
    "standard": ScanShape(length=256, channels=128, state=16),
}


class SelectiveScan(nn.Module):
    """Input-dependent (selective) diagonal state-space recurrence over the sequence."""

    def __init__(self, shape: ScanShape) -> None:
        super().__init__()
        self.delta = nn.Linear(shape.channels, shape.channels)
        self.b = nn.Linear(shape.channels, shape.state, bias=False)
        self.c = nn.Linear(shape.channels, shape.state, bias=False)
        self.log_a = nn.Parameter(torch.empty(shape.channels, shape.state))
        self.skip = nn.Parameter(torch.empty(shape.channels))
        self.reset_dynamics()

    def reset_dynamics(self) -> None:
        """``log_a`` to the log of decay rates 1..state for every channel (S4D-real), ``skip`` to ones."""
        channels, state = self.log_a.shape
        decay = torch.arange(1, state + 1, dtype=torch.float32).repeat(channels, 1)
        with torch.no_grad():
            self.log_a.copy_(torch.log(decay))
            self.skip.fill_(1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``y [1, length, channels]`` from the sequential scan of ``x``."""
        delta = torch.nn.functional.softplus(self.delta(x))  # [1, L, C]
        a = -torch.exp(self.log_a)  # [C, N]
        decay = torch.exp(delta.unsqueeze(-1) * a)  # [1, L, C, N]
        drive = (delta * x).unsqueeze(-1) * self.b(x).unsqueeze(-2)  # [1, L, C, N]
        readout = self.c(x)  # [1, L, N]
        h = torch.zeros_like(drive[:, 0])
        outputs = []
        for t in range(x.shape[1]):
            h = decay[:, t] * h + drive[:, t]
            outputs.append((h * readout[:, t].unsqueeze(-2)).sum(-1))
        return torch.stack(outputs, dim=1) + self.skip * x


class SsmScan(ExpressiveWorkload[ScanShape, SelectiveScan]):
    """Selective scan: h_t = a_t * h_{t-1} + b_t * x_t over time, per channel and state."""

    name = "ssm-scan"
    task = "sequence-scan"
    shapes = SHAPES
    sample_stream = 0x6A04

    def input_names(self) -> tuple[str, ...]:
        """One sequence."""
        return ("sequence",)

    def network(self, shape: ScanShape) -> SelectiveScan:
        """The scan."""
        return SelectiveScan(shape)

    def set_weights(self, model: SelectiveScan, seed: int) -> None:
        """Projections stay random; decay rates 1..state (as in S4D-real) and the skip as constructed."""
        model.reset_dynamics()

    def draw(self, shape: ScanShape, rng: np.random.Generator) -> Inputs:
        """A random-walk sequence (smooth in time, as signals are)."""
        steps = rng.standard_normal((1, shape.length, shape.channels)) * 0.3
        return (np.cumsum(steps, axis=1).astype(np.float32),)

    def describe(self, size: str) -> dict[str, str]:
        """Shape facts at ``size``."""
        shape = self.shape(size)
        return {
            "architecture": f"selective scan, {shape.channels} channels x {shape.state} states, "
            f"{shape.length} sequential steps",
            "input": f"sequence [1, {shape.length}, {shape.channels}] float32 (random walk)",
            "output": f"[1, {shape.length}, {shape.channels}]",
            "weights": "random projections seeded by the run seed; decay rates 1..state",
        }
