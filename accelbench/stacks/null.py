"""The null stack: returns a preallocated tiny array at once, to measure the harness's own overhead.

With ``batch`` samples per call the array is ``float32[batch, 1]``: one row per sample, as every stack.

Its outputs are not the model's (``computes = False``), so the quality gate skips it. It needs no
optional library and runs on the CPU only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from accelbench.stacks._torch_device import device_kind_reason
from accelbench.stacks.base import CellContext, ModelSpec, Session, Stack
from accelbench.workloads.base import Inputs

if TYPE_CHECKING:
    import torch


class NullStack(Stack):
    """A no-op stack: ``infer`` ignores its inputs and returns the same array (one element per sample)."""

    name: ClassVar[str] = "null"
    layers: ClassVar[Mapping[str, str]] = {"framework": "none", "compiler": "none", "platform": "none"}
    computes: ClassVar[bool] = False

    def unavailable_reason(self, device: str) -> str | None:
        """None on ``cpu``; a reason for any other device kind."""
        return device_kind_reason(device, self.devices)

    def versions(self) -> dict[str, str]:
        """No library is used."""
        return {}

    def prepare(self, model: torch.nn.Module, spec: ModelSpec, ctx: CellContext) -> Session:
        """A session whose ``infer`` returns a preallocated array without touching the model:
        ``float32[1]`` at batch 1 (as before batching existed), ``float32[batch, 1]`` above."""
        output = np.zeros(1 if spec.batch == 1 else (spec.batch, 1), dtype=np.float32)

        def infer(inputs: Inputs) -> np.ndarray:
            return output

        return Session(infer=infer, effective_precision="none", compile_s=0.0, details={})
