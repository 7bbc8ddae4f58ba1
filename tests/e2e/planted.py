"""Planted faulty stacks: the runner must record their failure and carry on with the other cells.

The cheating ones (cache, skip-repeat, bf16) give right-looking answers fast; the audits must flag them.
"""

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


def _eager(model: Any) -> Any:
    """The real model as a numpy -> numpy function (fp32, eager)."""
    import torch

    def run(inputs: tuple[Any, ...]) -> Any:
        with torch.inference_mode():
            return model(*(torch.from_numpy(a) for a in inputs)).numpy()

    return run


class CachingStack(_Planted):
    """Computes the real model but caches outputs by input bytes: the caching audit must flag it."""

    name = "planted-cache"

    def prepare(self, model: Any, spec: ModelSpec, ctx: CellContext) -> Session:
        run, cache = _eager(model), {}

        def infer(inputs: tuple[Any, ...]) -> Any:
            key = b"".join(a.tobytes() for a in inputs)
            if key not in cache:
                cache[key] = run(inputs)
            return cache[key]

        return Session(infer=infer, effective_precision="fp32", compile_s=0.0)


class SkipRepeatStack(_Planted):
    """Returns the previous output when the input equals the previous input: the caching audit flags it."""

    name = "planted-skip-repeat"

    def prepare(self, model: Any, spec: ModelSpec, ctx: CellContext) -> Session:
        import numpy as np

        run = _eager(model)
        last: dict[str, Any] = {}

        def infer(inputs: tuple[Any, ...]) -> Any:
            previous = last.get("inputs")
            if previous is None or not all(
                np.array_equal(a, b) for a, b in zip(previous, inputs, strict=True)
            ):
                last["inputs"], last["output"] = tuple(a.copy() for a in inputs), run(inputs)
            return last["output"]

        return Session(infer=infer, effective_precision="fp32", compile_s=0.0)


class SilentBf16Stack(_Planted):
    """Computes in bf16 (CPU autocast) while claiming fp32: the precision audit must flag it."""

    name = "planted-bf16"

    def prepare(self, model: Any, spec: ModelSpec, ctx: CellContext) -> Session:
        import torch

        def infer(inputs: tuple[Any, ...]) -> Any:
            with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
                return model(*(torch.from_numpy(a) for a in inputs)).float().numpy()

        return Session(infer=infer, effective_precision="fp32", compile_s=0.0)
