"""Batches: many samples in one stack call, cut and joined on axis 0 of every input.

A workload's sample has batch 1 on axis 0 of each input; a batch of ``batch`` samples is their
concatenation, and the stack's output holds one row per sample in the same order. A short batch (the
tail of an offline query) is padded to ``batch`` rows by repeating its last sample, and the padding rows
of the output are dropped: a session always sees the shapes it was compiled for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from accelbench.workloads.base import Inputs

Infer = Callable[[Inputs], np.ndarray]


def join(samples: Sequence[Inputs], batch: int) -> Inputs:
    """One batch of ``batch`` rows from up to ``batch`` samples (padded with the last one)."""
    if not samples or len(samples) > batch:
        raise ValueError(f"a batch of {batch} needs 1 to {batch} samples, got {len(samples)}")
    if batch == 1:
        return samples[0]
    padded = [*samples, *([samples[-1]] * (batch - len(samples)))]
    return tuple(np.concatenate([sample[k] for sample in padded], axis=0) for k in range(len(samples[0])))


def split(output: np.ndarray, count: int, batch: int) -> list[np.ndarray]:
    """The first ``count`` rows of the output of a batch of ``batch``, each kept with its batch axis
    (shape ``(1, ...)``); at batch 1 the output is the one sample's, whatever its shape."""
    rows = np.asarray(output)
    if batch == 1:
        return [rows]
    if rows.ndim == 0 or rows.shape[0] < count:
        shape = tuple(rows.shape)
        raise ValueError(f"the stack returned an output of shape {shape} for a batch of {count} samples")
    return [rows[i : i + 1] for i in range(count)]


def one_at_a_time(infer: Infer, batch: int) -> Infer:
    """``infer`` of a batch-``batch`` session as a function of one sample (padded, first row kept)."""
    if batch == 1:
        return infer

    def run(sample: Inputs) -> np.ndarray:
        return split(infer(join([sample], batch)), 1, batch)[0]

    return run
