"""Planted stacks that declare int8 and hide wrong answers in the slack a loose int8 bar used to give.

Each computes the real model (fp32 eager: well within any int8 budget) and spoils a share of its calls:

* ``planted-int8-garbage``: a random answer of the reference's spread on every tenth call;
* ``planted-int8-rare-garbage``: a random answer on 2% of its calls, drawn at random (the test of the
  judging function measures how often such a stack is caught, ``tests/unit/test_sample_judgement.py``);
* ``planted-int8-noisy``: on one call in ten (drawn), the right answer plus noise whose relative L2 error
  is twice the int8 sample budget: "close-ish", top-1 mostly unchanged, so today's top-1 bar of 0.8
  passed it;
* ``planted-int8-honest``: the control, eager torch with its Linear layers dynamically quantized to
  int8 (``torch.ao.quantization.quantize_dynamic``), returned as computed.

Before issue 40 the first three passed the int8 quality gate (top-1 agreement 0.8) and the precision
audit (int8 unchecked).
"""

from __future__ import annotations

import secrets
from typing import Any, ClassVar

import numpy as np

from accelbench.meters.quality import INT8_SAMPLE_BUDGET
from accelbench.stacks.base import CellContext, ModelSpec, Session
from tests.e2e.planted import Infer, _eager, _Planted

PRECISION_CHEATS = {
    "planted-int8-garbage": "tests.e2e.planted_precision:GarbageEveryTenthStack",
    "planted-int8-noisy": "tests.e2e.planted_precision:NoisyShareStack",
}
"""The cheats every run of the test judges (each caught with probability 0.99 or more)."""
RARE_CHEATS = {"planted-int8-rare-garbage": "tests.e2e.planted_precision:RareGarbageStack"}
"""Garbage on 2% of calls: caught with probability 0.59 to 0.89 (docs/audits.md), so not a test's pass."""
HONEST = {"planted-int8-honest": "tests.e2e.planted_precision:HonestInt8Stack"}


def garbage_like(output: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random answer of ``output``'s shape, mean and spread."""
    values = rng.standard_normal(output.shape) * float(output.std()) + float(output.mean())
    return values.astype(output.dtype)


def noisy_like(output: np.ndarray, rng: np.random.Generator, relative_l2: float) -> np.ndarray:
    """``output`` plus Gaussian noise of exactly ``relative_l2`` x ||output||."""
    noise = rng.standard_normal(output.shape)
    scale = relative_l2 * float(np.linalg.norm(output)) / float(np.linalg.norm(noise))
    return (output + noise * scale).astype(output.dtype)


class _Spoiling(_Planted):
    """The real model under an int8 label; ``spoil`` decides, per call, what to hand back instead."""

    def prepare(self, model: Any, spec: ModelSpec, ctx: CellContext) -> Session:
        run = _eager(model)
        rng = np.random.default_rng(secrets.randbits(64))
        calls = [0]

        def infer(inputs: tuple[Any, ...]) -> Any:
            calls[0] += 1
            return self.spoil(np.asarray(run(inputs)), calls[0], rng)

        return Session(infer=infer, effective_precision="int8", compile_s=0.0)

    def spoil(self, output: np.ndarray, call: int, rng: np.random.Generator) -> np.ndarray:
        """The answer handed back on call number ``call`` (1-based)."""
        raise NotImplementedError


class GarbageEveryTenthStack(_Spoiling):
    """A random answer on every tenth call."""

    name = "planted-int8-garbage"

    def spoil(self, output: np.ndarray, call: int, rng: np.random.Generator) -> np.ndarray:
        return garbage_like(output, rng) if call % 10 == 0 else output


class RareGarbageStack(_Spoiling):
    """A random answer on 2% of calls, drawn."""

    name = "planted-int8-rare-garbage"
    share: ClassVar[float] = 0.02

    def spoil(self, output: np.ndarray, call: int, rng: np.random.Generator) -> np.ndarray:
        return garbage_like(output, rng) if rng.random() < self.share else output


class NoisyShareStack(_Spoiling):
    """On one call in ten (drawn), the answer plus noise of twice the int8 budget (relative L2)."""

    name = "planted-int8-noisy"

    def spoil(self, output: np.ndarray, call: int, rng: np.random.Generator) -> np.ndarray:
        return noisy_like(output, rng, 2 * INT8_SAMPLE_BUDGET) if rng.random() < 0.1 else output


class HonestInt8Stack(_Planted):
    """Eager torch with dynamically int8-quantized Linear layers, reported as int8."""

    name = "planted-int8-honest"

    def prepare(self, model: Any, spec: ModelSpec, ctx: CellContext) -> Session:
        import torch

        quantized = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
        run: Infer = _eager(quantized)
        return Session(infer=run, effective_precision="int8", compile_s=0.0)
