"""Planted faulty stacks: the runner must record their failure and carry on with the other cells.

The cheating ones give right-looking answers fast, or skip work; the audits must disqualify each:
memoize from the first call (``planted-cache``), after k sightings (``planted-cache-after-3``,
``planted-cache-after-8``), only after warm-up (``planted-cache-after-warmup``), skip an input equal to
the previous one (``planted-skip-repeat``), return the previous query's output (``planted-stale``),
return zeros on every other query (``planted-zeros``), compute in bf16 under an fp32 label
(``planted-bf16``), and hand back an output buffer that a background thread fills after the sample
completed (``planted-early-return``).
"""

from __future__ import annotations

import os
import time
from abc import abstractmethod
from collections.abc import Callable
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


Infer = Callable[[tuple[Any, ...]], Any]


def _eager(model: Any) -> Infer:
    """The real model as a numpy -> numpy function (fp32, eager)."""
    import torch

    def run(inputs: tuple[Any, ...]) -> Any:
        with torch.inference_mode():
            return model(*(torch.from_numpy(a) for a in inputs)).numpy()

    return run


class _Wrapped(_Planted):
    """The real model, eager, behind the ``infer`` that ``wrap`` makes of it (labelled fp32)."""

    def prepare(self, model: Any, spec: ModelSpec, ctx: CellContext) -> Session:
        return Session(infer=self.wrap(_eager(model)), effective_precision="fp32", compile_s=0.0)

    @abstractmethod
    def wrap(self, run: Infer) -> Infer:
        """The session's ``infer``, calling the real model ``run`` (or not)."""


class CachingStack(_Wrapped):
    """Computes the real model but caches outputs by input bytes: the caching audit must flag it."""

    name = "planted-cache"

    def wrap(self, run: Infer) -> Infer:
        cache: dict[bytes, Any] = {}

        def infer(inputs: tuple[Any, ...]) -> Any:
            key = b"".join(a.tobytes() for a in inputs)
            if key not in cache:
                cache[key] = run(inputs)
            return cache[key]

        return infer


class SkipRepeatStack(_Wrapped):
    """Returns the previous output when the input equals the previous input: the caching audit flags it."""

    name = "planted-skip-repeat"

    def wrap(self, run: Infer) -> Infer:
        import numpy as np

        last: dict[str, Any] = {}

        def infer(inputs: tuple[Any, ...]) -> Any:
            previous = last.get("inputs")
            if previous is None or not all(
                np.array_equal(a, b) for a, b in zip(previous, inputs, strict=True)
            ):
                last["inputs"], last["output"] = tuple(a.copy() for a in inputs), run(inputs)
            return last["output"]

        return infer


class SilentBf16Stack(_Planted):
    """Computes in bf16 (CPU autocast) while claiming fp32: the precision audit must flag it."""

    name = "planted-bf16"

    def prepare(self, model: Any, spec: ModelSpec, ctx: CellContext) -> Session:
        import torch

        def infer(inputs: tuple[Any, ...]) -> Any:
            with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
                return model(*(torch.from_numpy(a) for a in inputs)).float().numpy()

        return Session(infer=infer, effective_precision="fp32", compile_s=0.0)


class _Memo:
    """An output cache keyed on input bytes that serves a sample once it was seen ``after`` times,
    counting only calls made after the first ``warmup`` calls and ``warmup_s`` seconds."""

    def __init__(self, run: Any, after: int = 0, warmup: int = 0, warmup_s: float = 0.0) -> None:
        self.run, self.after, self.warmup, self.warmup_s = run, after, warmup, warmup_s
        self.calls = 0
        self.first_s: float | None = None
        self.seen: dict[bytes, int] = {}
        self.cache: dict[bytes, Any] = {}

    def _armed(self) -> bool:
        now = time.perf_counter()
        self.first_s = now if self.first_s is None else self.first_s
        return self.calls > self.warmup and now - self.first_s >= self.warmup_s

    def __call__(self, inputs: tuple[Any, ...]) -> Any:
        self.calls += 1
        key = b"".join(a.tobytes() for a in inputs)
        if key in self.cache:
            return self.cache[key]
        output = self.run(inputs)
        if self._armed():
            self.seen[key] = self.seen.get(key, 0) + 1
            if self.seen[key] > self.after:
                self.cache[key] = output
        return output


class _MemoStack(_Wrapped):
    """The real model behind a ``_Memo`` cache configured by the class attributes."""

    after: ClassVar[int] = 0
    warmup: ClassVar[int] = 0
    warmup_s: ClassVar[float] = 0.0

    def wrap(self, run: Infer) -> Infer:
        return _Memo(run, after=self.after, warmup=self.warmup, warmup_s=self.warmup_s)


class CacheAfter3Stack(_MemoStack):
    """Caches an output once its input was seen 3 times."""

    name = "planted-cache-after-3"
    after = 3


class CacheAfter8Stack(_MemoStack):
    """Caches an output once its input was seen 8 times."""

    name = "planted-cache-after-8"
    after = 8


class CacheAfterWarmupStack(_MemoStack):
    """Honest for the first 0.6 s after its first call (warm-up, calibration, the run's start), then
    memoizes."""

    name = "planted-cache-after-warmup"
    warmup_s = 0.6


class CacheAfterQueriesStack(_MemoStack):
    """Honest for its first 250 calls, then memoizes."""

    name = "planted-cache-after-queries"
    warmup = 250


class StaleStack(_Wrapped):
    """Computes every input but returns the output of the previous query (a reused output buffer)."""

    name = "planted-stale"

    def wrap(self, run: Infer) -> Infer:
        previous: dict[str, Any] = {}

        def infer(inputs: tuple[Any, ...]) -> Any:
            output = run(inputs)
            stale = previous.get("output", output)
            previous["output"] = output
            return stale

        return infer


class ZerosStack(_Wrapped):
    """Skips the work on every other query and returns zeros of the right shape."""

    name = "planted-zeros"

    def wrap(self, run: Infer) -> Infer:
        import numpy as np

        state = {"calls": 0, "shape": None}

        def infer(inputs: tuple[Any, ...]) -> Any:
            state["calls"] += 1
            if state["calls"] % 2 == 0 and state["shape"] is not None:
                return np.zeros(state["shape"], np.float32)
            output = run(inputs)
            state["shape"] = output.shape
            return output

        return infer


class EarlyReturnStack(_Wrapped):
    """Returns an output buffer at once and fills it from a background thread, after LoadGen has taken the
    completion time (a lazy or asynchronous result handed back before the work is done): the output
    audit copies each checked output when the sample completes, and finds the buffer not yet written."""

    name = "planted-early-return"

    def wrap(self, run: Infer) -> Infer:
        import queue
        import threading

        import numpy as np

        pending: queue.Queue[tuple[tuple[Any, ...], Any]] = queue.Queue(maxsize=256)
        shapes: dict[int, Any] = {}

        def fill() -> None:
            while True:
                inputs, buffer = pending.get()
                buffer[...] = run(inputs)

        threading.Thread(target=fill, daemon=True).start()

        def infer(inputs: tuple[Any, ...]) -> Any:
            rows = inputs[0].shape[0]
            if rows not in shapes:  # the first call of a batch size learns the output's shape honestly
                output = run(inputs)
                shapes[rows] = output.shape
                return output
            buffer = np.zeros(shapes[rows], np.float32)
            if not pending.full():
                pending.put((inputs, buffer))
            return buffer

        return infer


CHEATS = {
    "planted-cache": "tests.e2e.planted:CachingStack",
    "planted-cache-after-3": "tests.e2e.planted:CacheAfter3Stack",
    "planted-cache-after-8": "tests.e2e.planted:CacheAfter8Stack",
    "planted-cache-after-warmup": "tests.e2e.planted:CacheAfterWarmupStack",
    "planted-cache-after-queries": "tests.e2e.planted:CacheAfterQueriesStack",
    "planted-skip-repeat": "tests.e2e.planted:SkipRepeatStack",
    "planted-stale": "tests.e2e.planted:StaleStack",
    "planted-zeros": "tests.e2e.planted:ZerosStack",
    "planted-bf16": "tests.e2e.planted:SilentBf16Stack",
    "planted-early-return": "tests.e2e.planted:EarlyReturnStack",
}
"""Every planted cheat by name: each must end ``disqualified``."""
