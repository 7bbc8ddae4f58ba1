"""The ``torch-inductor`` stack: ``torch.compile`` with Inductor (C++/OpenMP on CPU, Triton on CUDA).

On CPU, ``torch._inductor.config.freezing`` is switched on: without it Inductor is slower than eager on
conv nets. Compiled artefacts go to ``TORCHINDUCTOR_CACHE_DIR`` (the runner sets it per run to
``<cache_dir>/inductor``); whether that folder was empty before compiling is recorded as a cold or warm
cache, because a warm cache cuts compile time several-fold.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from accelbench.errors import Unsupported
from accelbench.stacks._torch_device import (
    TorchStack,
    first_line,
    gpu_default_batch,
    make_torch_infer,
    place_model,
    precision_of,
    time_first_call_s,
)
from accelbench.stacks.base import CellContext, ModelSpec, Session

if TYPE_CHECKING:
    import torch

CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"


def inductor_cache_dir(ctx: CellContext) -> Path:
    """The Inductor cache folder: ``$TORCHINDUCTOR_CACHE_DIR``, set to ``ctx.cache_dir/inductor`` if unset.

    Merely importing some libraries (e.g. ``transformers`` models) makes torch fill in the variable with
    its shared default in the system temp folder; that value counts as unset too.
    """
    current = os.environ.get(CACHE_ENV)
    if current is None or _is_torch_default(current):
        os.environ[CACHE_ENV] = str(ctx.cache_dir / "inductor")
    return Path(os.environ[CACHE_ENV])


def _is_torch_default(folder: str) -> bool:
    """Whether ``folder`` is the cache folder torch picks by itself (``<tmp>/torchinductor_<user>``)."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    return os.path.abspath(folder) == os.path.abspath(default_cache_dir())


def cache_state(folder: Path) -> str:
    """``"warm"`` when ``folder`` holds anything, else ``"cold"``."""
    return "warm" if folder.is_dir() and any(folder.iterdir()) else "cold"


class TorchInductor(TorchStack):
    """``torch.compile(model)`` (Inductor, default mode); compile time is the first call's wall time."""

    name: ClassVar[str] = "torch-inductor"
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "PyTorch",
        "compiler": "TorchInductor (torch.compile)",
        "platform": "CPU: C++/OpenMP + oneDNN; CUDA: Triton",
    }

    def default_batch(self, device: str) -> int:
        """4 on CPU: bert-base samples/s went 5.6 -> 14.6 -> 15.7 -> 15.6 at batch 1, 4, 8, 16
        (``BATCH_MEASURED``): 4 has nearly all the gain at half the audit feed's samples per trial
        (the feed fills whole batches). 32 on CUDA (not measured here)."""
        return gpu_default_batch(device, cpu_batch=4)

    def prepare(self, model: torch.nn.Module, spec: ModelSpec, ctx: CellContext) -> Session:
        """Compile ``model`` by calling it once on ``spec.example``; raise Unsupported if that fails."""
        cache = inductor_cache_dir(ctx)
        state = cache_state(cache)
        import torch
        import torch._inductor.config

        model, device, details = place_model(model, ctx)
        if device.type == "cpu":
            torch._inductor.config.freezing = True
        infer = make_torch_infer(torch.compile(model), device)
        try:
            compile_s = time_first_call_s(infer, spec.example)
        except Exception as exc:
            raise Unsupported(f"inductor compile failed: {first_line(exc)}") from exc
        details |= {"freezing": str(torch._inductor.config.freezing), "cache": state, "cache_dir": str(cache)}
        return Session(infer, precision_of(model), compile_s, details)
