"""Planted faulty stacks: the runner must record their failure and carry on with the other cells.

The cheating ones give right-looking answers fast, or skip work; the audits must disqualify each:
memoize from the first call (``planted-cache``), after k sightings (``planted-cache-after-3``,
``planted-cache-after-8``), only after warm-up (``planted-cache-after-warmup``), skip an input equal to
the previous one (``planted-skip-repeat``), return the previous query's output (``planted-stale``),
return zeros on every other query (``planted-zeros``), compute in bf16 under an fp32 label
(``planted-bf16``), hand back an output buffer that a background thread fills after the sample
completed (``planted-early-return``), cache inputs seen 2-6 times but none of the last 8 calls
(``planted-sighting-window``), cache inputs not seen in the last 8 calls (``planted-recency-gated``),
and answer only the inputs it can regenerate from every field it sees (``planted-seed-oracle``).
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

        state: dict[str, Any] = {"calls": 0, "shape": None}

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


class _Gated:
    """An output cache keyed on input bytes that serves a seen input when ``serves(sightings before,
    calls since its last sighting)`` says so, and computes otherwise."""

    def __init__(self, run: Any, serves: Callable[[int, int], bool]) -> None:
        self.run, self.serves = run, serves
        self.calls = 0
        self.seen: dict[bytes, tuple[int, int, Any]] = {}

    def __call__(self, inputs: tuple[Any, ...]) -> Any:
        self.calls += 1
        key = b"".join(a.tobytes() for a in inputs)
        count, last, output = self.seen.get(key, (0, 0, None))
        if not (count and self.serves(count, self.calls - last)):
            output = self.run(inputs)
        self.seen[key] = (count + 1, self.calls, output)
        return output


class SightingWindowStack(_Wrapped):
    """Serves an input seen 2 to 6 times before from its cache, never one seen in the last 8 calls (so
    neither the immediate repeats after the run nor probes seen 8+ times ever hit it)."""

    name = "planted-sighting-window"

    def wrap(self, run: Infer) -> Infer:
        return _Gated(run, lambda count, since: 2 <= count <= 6 and since > 8)


class RecencyGatedStack(_Wrapped):
    """Serves a seen input from its cache unless it was seen in the last 8 calls (the repeats of a big
    timed pool are far apart; a probe repeated at once is computed). (Gated at 32 calls it is caught in a
    run of 900 samples, ``benchmarks/repeat_sensitivity.py``; in a 110-sample run on a loaded machine it
    hardly ever serves a timed sample either.)"""

    name = "planted-recency-gated"

    def wrap(self, run: Infer) -> Infer:
        return _Gated(run, lambda count, since: since > 8)


ORACLE_INDICES = 1100
"""Sample indices the seed oracle regenerates per guessed seed: under the old fixed layout, the timed
pool of the tiny suite (1024), its calibration samples and the first audit samples."""


def oracle_seeds(spec: ModelSpec, ctx: CellContext) -> set[int]:
    """Every seed a stack could guess from what it is handed: the integers of ``ModelSpec`` and
    ``CellContext``, of every JSON file in the cell's folder (the spec), of the run id, with the old
    alternate-seed offset added."""
    import json
    import re

    found = {spec.seed, ctx.threads, spec.batch}
    texts = [str(ctx.work_dir), str(ctx.cache_dir)]
    for path in ctx.work_dir.glob("*.json"):
        texts.append(path.read_text())
        found |= set(_integers(json.loads(path.read_text())))
    for text in texts:
        found |= {int(digits) for digits in re.findall(r"\d+", text)}
    guesses = {n + delta for n in found for delta in (0, 0x5EED)}
    return {n for n in guesses if 0 <= n < 1 << 63}


def _integers(document: Any) -> list[int]:
    if isinstance(document, bool):
        return []
    if isinstance(document, int):
        return [document]
    if isinstance(document, dict):
        return [n for value in document.values() for n in _integers(value)]
    if isinstance(document, list):
        return [n for value in document for n in _integers(value)]
    return []


def oracle_table(spec: ModelSpec, ctx: CellContext, indices: int = ORACLE_INDICES) -> set[bytes]:
    """The input bytes of every sample the stack can regenerate: each guessed seed (``oracle_seeds``) at
    indices 0 to ``indices``, with the workload's own generator (``ModelSpec`` names it)."""
    from accelbench import registry, variants

    workload = registry.instantiate(registry.resolve("workload", (spec.workload,))[spec.workload])
    drawn = variants.resolve(workload, spec.size, spec.variant)
    variant = drawn.variant if drawn else None
    return {
        _key(variants.make_sample(workload, spec.size, seed, index, variant))
        for seed in sorted(oracle_seeds(spec, ctx))
        for index in range(indices)
    }


def _key(inputs: tuple[Any, ...]) -> bytes:
    """A digest of the input bytes (the table holds tens of thousands of samples)."""
    import hashlib

    digest = hashlib.blake2b(digest_size=16)
    for array in inputs:
        digest.update(array.tobytes())
    return digest.digest()


class SeedOracleStack(_Planted):
    """Regenerates in ``prepare`` (untimed) every sample it can from every field it sees and answers
    only those it recognises, with zeros for the rest (a real one would answer from a table of
    precomputed outputs). With inputs drawn from a seed it never sees, it recognises none: the output
    audit catches the zeros. Its hits are written to ``oracle_hits.txt`` in the cell's folder."""

    name = "planted-seed-oracle"

    def prepare(self, model: Any, spec: ModelSpec, ctx: CellContext) -> Session:
        import numpy as np

        table = oracle_table(spec, ctx)
        run = _eager(model)
        shape = run(spec.example).shape
        hits = ctx.work_dir / "oracle_hits.txt"
        counts = {"hits": 0, "calls": 0}

        def infer(inputs: tuple[Any, ...]) -> Any:
            counts["calls"] += 1
            if _key(inputs) in table:
                counts["hits"] += 1
                hits.write_text(f"{counts['hits']} of {counts['calls']}\n")
                return run(inputs)
            return np.zeros(shape, np.float32)

        return Session(infer=infer, effective_precision="fp32", compile_s=0.0)


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
    "planted-sighting-window": "tests.e2e.planted:SightingWindowStack",
    "planted-recency-gated": "tests.e2e.planted:RecencyGatedStack",
    "planted-seed-oracle": "tests.e2e.planted:SeedOracleStack",
}
"""Every planted cheat by name: each must end ``disqualified``."""


DAEMON_MARK = "accelbench-planted-daemon"
"""In the command line of the process ``planted-daemon`` leaves behind (a test looks for it in /proc)."""
_DAEMON = f"""
import os, sys, time
if os.fork():
    os._exit(0)
os.setsid()  # a session of its own: no group kill of the cell or its SUT process reaches it
os.execv(sys.executable, [sys.executable, "-c", "import time  # {DAEMON_MARK}\\ntime.sleep(600)"])
"""


class DaemonStack(_Wrapped):
    """The real model, eager; while preparing it leaves a daemon in a session of its own, which would
    outlive the cell (re-parented to the runner) and could slow the cells after it."""

    name = "planted-daemon"

    def wrap(self, run: Infer) -> Infer:
        import subprocess
        import sys

        subprocess.run([sys.executable, "-c", _DAEMON], check=True, timeout=30)
        return run
