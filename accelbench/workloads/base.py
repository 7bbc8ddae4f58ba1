"""The Workload interface: a model family defined once in PyTorch, its inputs and its quality check.

A workload builds an fp32 ``torch.nn.Module`` with seeded weights (or real pretrained weights shipped in
a registry package) whose ``forward`` takes one tensor per entry of ``input_names`` (batch 1) and returns
one tensor. ``make_sample`` generates the inputs of sample ``index`` deterministically from a seed, as
numpy arrays, so every stack sees byte-identical inputs.

A ``Variant`` is a near-identical mutation of the model (``accelbench.variants`` draws it from a seed):
``changes`` replaces fields of the workload's shape record, ``mutations`` says in words what changed.
``build_model``, ``make_sample``, ``architecture`` and ``sanity_check`` take it; ``None`` is the
canonical model, built exactly as without variants. ``draw_changes`` is the workload's generator.

Batching: a stack may run ``batch`` samples per call, concatenated on axis 0. ``batch_reason`` says
why a workload's samples cannot be batched that way (None: they can).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from accelbench.errors import Unsupported

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

    @classmethod
    def judged(cls, name: str, value: float, threshold: float, detail: str) -> SanityVerdict:
        """The verdict of a check that measured ``value`` against its ``threshold`` (``sanity_passes``)."""
        return cls(name, sanity_passes(value, threshold), value, threshold, detail)


def sanity_passes(value: float, threshold: float) -> bool:
    """A workload's semantic check's one rule: its value at or above its threshold (NaN fails;
    ``accelbench.bundle.rejudge`` calls it on a stored sanity record)."""
    return value >= threshold


@dataclass(frozen=True, slots=True)
class Mutation:
    """One change a variant makes to the canonical model: ``kind`` (``width``, ``depth``, ...) and what."""

    kind: str
    detail: str


@dataclass(frozen=True, slots=True)
class Variant:
    """A seeded, near-identical mutation of a workload, ready to build (see ``accelbench.variants``)."""

    name: str
    """``s<variant_seed>-v<index>``: everything needed to draw it again."""
    changes: Mapping[str, Any]
    """Fields of the workload's shape record that differ from the canonical model."""
    mutations: tuple[Mutation, ...] = field(default_factory=tuple)


Changes = tuple[dict[str, Any], list[Mutation]]
"""What ``Workload.draw_changes`` returns: shape-field overrides and their description."""


class Workload(ABC):
    """A named model family with a canonical size, an input generator and a quality metric."""

    name: ClassVar[str]
    task: ClassVar[str]
    """``image-classification`` or ``text-embedding``."""
    quality_metric: ClassVar[str]
    """``top1`` (classifier: top-1 agreement with the fp32 reference) or ``cosine`` (embeddings)."""
    driver: ClassVar[str] = "loadgen"
    """The cell driver that measures it (``accelbench.registry.DRIVERS``)."""
    scenarios: ClassVar[tuple[str, ...]] = ("single-stream", "multi-stream", "server", "offline")
    """The scenarios its cells run in (the planner leaves the others out)."""
    performance_sample_count: ClassVar[int] = 1024
    """Distinct samples in the timed pool at least (MLPerf's ``performance_sample_count``: 1024 for
    ResNet-50, 10833 for BERT), so that an honest stack sees each timed sample rarely."""

    @abstractmethod
    def input_names(self) -> tuple[str, ...]:
        """Names of the model inputs, in the order ``forward`` takes them."""

    @abstractmethod
    def build_model(self, size: str, seed: int, variant: Variant | None = None) -> torch.nn.Module:
        """The fp32 model in eval mode, weights seeded by ``seed`` (or pretrained); ``variant`` applied."""

    @abstractmethod
    def make_sample(self, size: str, seed: int, index: int, variant: Variant | None = None) -> Inputs:
        """Inputs of sample ``index``: deterministic in (size, seed, index, variant)."""

    def architecture(self, size: str, variant: Variant | None = None) -> torch.nn.Module:
        """The model's layers without calibrated or loaded weights: enough to count FLOPs.

        ``accelbench.variants`` calls it under ``torch.device("meta")``; the default builds the model.
        """
        return self.build_model(size, 0, variant)

    def draw_changes(self, size: str, rng: np.random.Generator) -> Changes:
        """One random near-identical mutation of the model at ``size``; workloads without one raise."""
        raise Unsupported(f"workload {self.name} has no variant generator")

    def describe(self, size: str) -> dict[str, str]:
        """Human-readable facts about the model at ``size`` (shape, layers, weights origin)."""
        return {}

    def batch_reason(self, size: str) -> str | None:
        """None when samples at ``size`` join into batches on axis 0 and each output row is its
        sample's, else a one-line reason why not.

        That needs every input of every sample to have the same shape with batch 1 on axis 0, and no
        computation that mixes rows. Workloads whose inputs are not rows (a graph, flat bags with
        offsets) or whose shapes differ between samples override it.
        """
        return None

    def sanity_check(
        self, size: str, infer: Callable[[Inputs], np.ndarray], variant: Variant | None = None
    ) -> SanityVerdict | None:
        """A semantic check a real model must pass through ``infer``; None if the workload has none."""
        return None
