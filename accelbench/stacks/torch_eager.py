"""The ``torch-eager`` stack: the PyTorch module run as is, op by op (ATen / oneDNN / MKL, or CUDA)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from accelbench.stacks._torch_device import (
    TorchStack,
    gpu_default_batch,
    make_torch_infer,
    place_model,
    precision_of,
    time_first_call_s,
)
from accelbench.stacks.base import CellContext, ModelSpec, Session

if TYPE_CHECKING:
    import torch


class TorchEager(TorchStack):
    """PyTorch eager mode under ``torch.inference_mode()``: the baseline every other stack is compared to."""

    name: ClassVar[str] = "torch-eager"
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "PyTorch",
        "compiler": "none (eager)",
        "platform": "CPU: ATen/oneDNN/MKL; CUDA",
    }

    def default_batch(self, device: str) -> int:
        """1 on CPU: the rise with the batch measured on bert-base (``BATCH_MEASURED``: 0.24 at 1, 0.73
        at 4, 1.51 at 16) was taken under a load average near 9 and is not established; at batch 4 the
        default ``make run`` took 75 s longer (its offline cells issue about 2.5x the samples, since the
        audit feed fills whole batches). ``--batch-sweep`` measures it. 32 on CUDA (not measured)."""
        return gpu_default_batch(device, cpu_batch=1)

    def prepare(self, model: torch.nn.Module, spec: ModelSpec, ctx: CellContext) -> Session:
        """Move ``model`` to the device and time one warm-up call (recorded, not counted as compile)."""
        model, device, details = place_model(model, ctx)
        infer = make_torch_infer(model, device)
        details["first_call_s"] = f"{time_first_call_s(infer, spec.example):.6f}"
        return Session(infer=infer, effective_precision=precision_of(model), compile_s=0.0, details=details)
