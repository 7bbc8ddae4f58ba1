"""Planted faulty stacks: the runner must record their failure and carry on with the other cells."""

from __future__ import annotations

import os
import time
from typing import Any, ClassVar

from accelbench.stacks.base import CellContext, ModelSpec, Session, Stack


class _Planted(Stack):
    layers: ClassVar[dict[str, str]] = {"framework": "test", "compiler": "none", "platform": "test"}

    def unavailable_reason(self, device: str) -> str | None:
        return None

    def versions(self) -> dict[str, str]:
        return {}


class CrashStack(_Planted):
    """Dies with SIGABRT while preparing, as a segfaulting compiler would."""

    name = "planted-crash"

    def prepare(self, model: Any, spec: ModelSpec, ctx: CellContext) -> Session:
        os.abort()


class HangStack(_Planted):
    """Never returns from prepare."""

    name = "planted-hang"

    def prepare(self, model: Any, spec: ModelSpec, ctx: CellContext) -> Session:
        time.sleep(3600)
        raise AssertionError("unreachable")


class RaiseStack(_Planted):
    """Raises an ordinary exception while preparing."""

    name = "planted-raise"

    def prepare(self, model: Any, spec: ModelSpec, ctx: CellContext) -> Session:
        raise RuntimeError("planted failure\nsecond line")


class NoisyStack(_Planted):
    """Runs the real model but perturbs its outputs: the quality gate must fail it."""

    name = "planted-noisy"

    def prepare(self, model: Any, spec: ModelSpec, ctx: CellContext) -> Session:
        import numpy as np
        import torch

        rng = np.random.default_rng(0)

        def infer(inputs: tuple[np.ndarray, ...]) -> np.ndarray:
            with torch.inference_mode():
                out = model(*(torch.from_numpy(a) for a in inputs)).numpy()
            return out + rng.standard_normal(out.shape).astype(out.dtype) * float(np.abs(out).max())

        return Session(infer=infer, effective_precision="fp32", compile_s=0.0)
