"""Seeded choices the workloads' variant generators share: sizes off powers of two, another option.

Only numpy; the workloads import this module, so it must not import them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")

SCALE_RANGE = (0.75, 1.3)
"""A resized dimension is the canonical one times a factor drawn uniformly from this range."""
ALIGNMENT = 8
"""Resized dimensions avoid multiples of this (SIMD widths and tile sizes are multiples of 8)."""


def off_power_of_two(rng: np.random.Generator, value: int, low: int = 1, high: int | None = None) -> int:
    """``value`` scaled by a random factor in ``SCALE_RANGE``, never a multiple of ``ALIGNMENT``.

    The result differs from ``value`` and lies in ``[low, high]`` (e.g. 64 -> 63, 128 -> 97, 256 -> 250).
    """
    top = high if high is not None else 1 << 30
    drawn = round(value * rng.uniform(*SCALE_RANGE))
    drawn = max(low, min(top, drawn))
    step = -1 if drawn > low else 1
    while (drawn % ALIGNMENT == 0 or drawn == value) and low <= drawn + step <= top:
        drawn += step
    return drawn


def other_than(rng: np.random.Generator, options: Sequence[T], current: T) -> T:
    """A random entry of ``options`` that is not ``current`` (``options`` holds at least one other)."""
    others = [option for option in options if option != current]
    return others[int(rng.integers(len(others)))]


def depth_step(rng: np.random.Generator, depth: int, low: int = 1) -> int:
    """``depth`` plus or minus one, never below ``low``."""
    if depth <= low:
        return depth + 1
    return depth + (1 if rng.random() < 0.5 else -1)


def kinds_to_apply(rng: np.random.Generator, kinds: Sequence[str], low: int = 2, high: int = 3) -> list[str]:
    """Between ``low`` and ``high`` distinct mutation kinds, in ``kinds`` order."""
    count = int(rng.integers(min(low, len(kinds)), min(high, len(kinds)) + 1))
    chosen = set(rng.choice(len(kinds), size=count, replace=False).tolist())
    return [kind for index, kind in enumerate(kinds) if index in chosen]
