"""The Workload interface: a model family defined once in PyTorch, its inputs and its quality check.

A workload builds an fp32 ``torch.nn.Module`` with seeded weights (or real pretrained weights shipped in
a registry package) whose ``forward`` takes one tensor per entry of ``input_names`` (batch 1) and returns
one tensor. ``make_sample`` generates the inputs of sample ``index`` deterministically from a seed, as
numpy arrays, so every stack sees byte-identical inputs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

if TYPE_CHECKING:
    import torch

Inputs = tuple[np.ndarray, ...]
"""The inputs of one sample (batch 1), one array per model input, in ``input_names`` order."""

SIZES = ("tiny", "standard")


@dataclass(frozen=True, slots=True)
class SanityVerdict:
    """Outcome of a workload's own semantic check (e.g. MiniLM must rank sentence pairs correctly)."""

    name: str
    passed: bool
    value: float
    threshold: float
    detail: str


class Workload(ABC):
    """A named model family with a canonical size, an input generator and a quality metric."""

    name: ClassVar[str]
    task: ClassVar[str]
    """``image-classification`` or ``text-embedding``."""
    quality_metric: ClassVar[str]
    """``top1`` (classifier: top-1 agreement with the fp32 reference) or ``cosine`` (embeddings)."""

    @abstractmethod
    def input_names(self) -> tuple[str, ...]:
        """Names of the model inputs, in the order ``forward`` takes them."""

    @abstractmethod
    def build_model(self, size: str, seed: int) -> torch.nn.Module:
        """The fp32 model in eval mode, weights seeded by ``seed`` (or pretrained)."""

    @abstractmethod
    def make_sample(self, size: str, seed: int, index: int) -> Inputs:
        """Inputs of sample ``index``: deterministic in (size, seed, index)."""

    def describe(self, size: str) -> dict[str, str]:
        """Human-readable facts about the model at ``size`` (shape, layers, weights origin)."""
        return {}

    def sanity_check(self, size: str, infer: Callable[[Inputs], np.ndarray]) -> SanityVerdict | None:
        """A semantic check a real model must pass through ``infer``; None if the workload has none."""
        return None
