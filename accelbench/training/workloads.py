"""Training workloads: a model, a labelled data set with a held-out split, and a recipe to a quality target.

- ``digits-resnet``: a small ResNet-style CNN (stem, residual blocks of two 3x3 convolutions with batch
  norm, global average pooling, linear head) on scikit-learn's digits; target: top-1 on the 359 held out.
- ``topics-minilm``: a classification head trained on frozen all-MiniLM-L6-v2 sentence embeddings of the
  hand-written topics set; target: a stated fraction of the top-1 the reference recipe reaches.

``tiny`` converges in seconds on two loaded cores; ``standard`` is bigger and has a higher target.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from accelbench.training.data import Dataset, digits, topics
from accelbench.workloads.base import SIZES


@dataclass(frozen=True, slots=True)
class Recipe:
    """How a workload is trained at one size: optimizer settings, the quality target and the epoch cap."""

    global_batch_size: int
    learning_rate: float
    momentum: float
    weight_decay: float
    target: float
    """Top-1 on the held-out set that ends a run (``>=``)."""
    max_epochs: int
    """A run that has not reached ``target`` after this many epochs stops and counts as unconverged."""
    threads_cap: int = 0
    """At most this many intra-op threads per process (0: no cap); tiny models lose time to thread sync."""


def _check(size: str, name: str) -> None:
    if size not in SIZES:
        raise ValueError(f"{name}: unknown size {size!r}; known: {', '.join(SIZES)}")


class TrainingWorkload(ABC):
    """A model family trained to a quality target on a data set that ships offline."""

    name: ClassVar[str]
    task: ClassVar[str]
    quality_metric: ClassVar[str] = "top1"
    driver: ClassVar[str] = "train-to-quality"
    """The cell driver that measures it (``accelbench.registry.DRIVERS``)."""
    scenarios: ClassVar[tuple[str, ...]] = ("train-to-quality",)
    """The scenarios its cells run in (and ``train-to-quality`` runs only training workloads)."""
    mlperf_benchmark: ClassVar[str]
    """``submission_benchmark`` in the MLPerf log (accelbench's own name, not an MLPerf benchmark)."""

    @abstractmethod
    def dataset(self, size: str) -> Dataset:
        """The training and held-out data."""

    @abstractmethod
    def recipe(self, size: str) -> Recipe:
        """Optimizer settings, target and epoch cap at ``size``."""

    @abstractmethod
    def build_model(self, size: str, seed: int) -> nn.Module:
        """The fp32 model with weights initialised from ``seed``, in train mode."""

    def describe(self, size: str) -> dict[str, str]:
        """Human-readable facts about the workload at ``size``."""
        recipe = self.recipe(size)
        return {
            "target": f"top-1 >= {recipe.target} on the held-out set",
            "recipe": f"SGD momentum {recipe.momentum}, lr {recipe.learning_rate}, "
            f"global batch {recipe.global_batch_size}, at most {recipe.max_epochs} epochs",
        }


class _Block(nn.Module):
    """A basic residual block: two 3x3 convolutions with batch norm, identity shortcut."""

    def __init__(self, width: int):
        super().__init__()
        self.conv1 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """relu(x + bn(conv(relu(bn(conv(x))))))."""
        inner = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(inner)))


def small_resnet(width: int, blocks: int, classes: int) -> nn.Module:
    """Stem conv, ``blocks`` residual blocks at ``width`` channels, global average pool, linear head."""
    return nn.Sequential(
        nn.Conv2d(1, width, 3, padding=1, bias=False),
        nn.BatchNorm2d(width),
        nn.ReLU(),
        *[_Block(width) for _ in range(blocks)],
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(width, classes),
    )


class DigitsResNet(TrainingWorkload):
    """A small ResNet-style CNN on scikit-learn's 8x8 digits, to a top-1 target on 359 held-out images."""

    name = "digits-resnet"
    task = "image-classification (training)"
    mlperf_benchmark = "accelbench_digits_resnet"
    SHAPE: ClassVar[dict[str, tuple[int, int]]] = {"tiny": (16, 1), "standard": (32, 2)}
    """(width, residual blocks) per size."""

    def dataset(self, size: str) -> Dataset:
        """scikit-learn's digits, 1438 training and 359 held-out images."""
        _check(size, self.name)
        return digits()

    def recipe(self, size: str) -> Recipe:
        """97% top-1 (tiny) or 98% (standard)."""
        _check(size, self.name)
        if size == "tiny":
            return Recipe(32, 0.05, 0.9, 0.0, target=0.97, max_epochs=30, threads_cap=1)
        return Recipe(64, 0.1, 0.9, 5e-4, target=0.98, max_epochs=40)

    def build_model(self, size: str, seed: int) -> nn.Module:
        """The CNN at ``size`` with weights from ``seed``."""
        _check(size, self.name)
        width, blocks = self.SHAPE[size]
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return small_resnet(width, blocks, 10)

    def describe(self, size: str) -> dict[str, str]:
        """Architecture, data and target."""
        width, blocks = self.SHAPE[size]
        return {
            "architecture": f"ResNet-style CNN: 3x3 stem, {blocks} residual block(s) of width {width}, "
            "global average pool, linear 10",
            "data": "sklearn digits 8x8 (1438 train / 359 held out, stratified, fixed split)",
            **super().describe(size),
        }


class TopicsMiniLM(TrainingWorkload):
    """A topic classifier head on frozen all-MiniLM-L6-v2 embeddings of the shipped topics sentences."""

    name = "topics-minilm"
    task = "text-classification (training)"
    mlperf_benchmark = "accelbench_topics_minilm"
    HIDDEN: ClassVar[dict[str, int]] = {"tiny": 32, "standard": 256}
    REFERENCE: ClassVar[dict[str, float]] = {"tiny": 0.983, "standard": 0.983}
    """Held-out top-1 (59/60) the recipe reaches after 100 eager epochs, seeds 0-2 (``docs/training.md``)."""
    TARGET_FRACTION: ClassVar[dict[str, float]] = {"tiny": 0.95, "standard": 0.98}
    """The target is this fraction of ``REFERENCE``."""

    def dataset(self, size: str) -> Dataset:
        """240 training and 60 held-out sentences (12 per topic), as 384-d embeddings."""
        _check(size, self.name)
        return topics()

    def recipe(self, size: str) -> Recipe:
        """Target = ``TARGET_FRACTION`` x ``REFERENCE``."""
        _check(size, self.name)
        target = round(self.TARGET_FRACTION[size] * self.REFERENCE[size], 4)
        if size == "tiny":
            return Recipe(16, 0.1, 0.9, 0.0, target=target, max_epochs=40, threads_cap=1)
        return Recipe(16, 0.05, 0.9, 1e-4, target=target, max_epochs=60)

    def build_model(self, size: str, seed: int) -> nn.Module:
        """Linear(384, hidden) - ReLU - Linear(hidden, 5), weights from ``seed``."""
        _check(size, self.name)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return nn.Sequential(
                nn.Linear(384, self.HIDDEN[size]), nn.ReLU(), nn.Linear(self.HIDDEN[size], 5)
            )

    def describe(self, size: str) -> dict[str, str]:
        """Architecture, data and target."""
        return {
            "architecture": f"MLP head 384-{self.HIDDEN[size]}-5 on frozen all-MiniLM-L6-v2 embeddings",
            "data": "300 hand-written topic sentences shipped with accelbench (240 train / 60 held out)",
            "reference": f"top-1 {self.REFERENCE[size]} (target = {self.TARGET_FRACTION[size]} x reference)",
            **super().describe(size),
        }
