"""What the expressiveness workloads share: the cosine gate, size lookup and seeded generators.

A workload says what its network and its samples are (``network``, ``draw``); ``build_model`` and
``make_sample`` look the shape up, seed, and hand it over.
"""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar

import numpy as np

from accelbench.errors import UserError
from accelbench.workloads.base import SIZES, Inputs, Variant, Workload

if TYPE_CHECKING:
    import torch

ShapeT = TypeVar("ShapeT")
NetworkT = TypeVar("NetworkT", bound="torch.nn.Module")


class ExpressiveWorkload(Workload, Generic[ShapeT, NetworkT]):
    """A workload of the expressiveness suite: per-size shapes, cosine quality, seeded streams."""

    quality_metric = "cosine"
    shapes: ClassVar[Mapping[str, object]]
    sample_stream: ClassVar[int]
    """First word of the numpy seed sequence of this workload's samples (distinct per workload)."""
    weight_scale: ClassVar[float] = 1.0
    """The ``scale`` of ``seeded`` for this workload's parameters."""

    @abstractmethod
    def network(self, shape: ShapeT) -> NetworkT:
        """The network of ``shape``, as constructed (``build_model`` seeds its weights)."""

    def set_weights(self, model: NetworkT, seed: int) -> None:
        """Set, under ``torch.no_grad()``, the weights that ``seeded``'s draw is not right for (none here)."""

    @abstractmethod
    def draw(self, shape: ShapeT, rng: np.random.Generator) -> Inputs:
        """The inputs of one sample of ``shape``, drawn from ``rng``."""

    def build_model(self, size: str, seed: int, variant: Variant | None = None) -> torch.nn.Module:
        """The ``network`` at ``size`` (the global torch RNG untouched), every parameter drawn by
        ``seeded`` with ``weight_scale``, then ``set_weights``; in eval mode."""
        import torch

        with torch.random.fork_rng(devices=[]):
            model = self.network(self.shape(size, variant))
        seeded(model, seed, scale=self.weight_scale)
        with torch.no_grad():
            self.set_weights(model, seed)
        return model.eval()

    def make_sample(self, size: str, seed: int, index: int, variant: Variant | None = None) -> Inputs:
        """Sample ``index``: ``draw`` at the shape of ``size``, from the sample's own ``sample_rng``."""
        return self.draw(self.shape(size, variant), self.sample_rng(size, seed, index))

    def shape(self, size: str, variant: Variant | None = None) -> ShapeT:
        """The dimensions at ``size`` with the variant's changes applied; an unknown size is a UserError."""
        if size not in self.shapes:
            raise UserError(f"{self.name}: unknown size {size!r}; expected one of {', '.join(SIZES)}")
        shape = self.shapes[size]
        if variant is not None and variant.changes:
            shape = dataclasses.replace(shape, **variant.changes)  # type: ignore[type-var]
        return shape  # type: ignore[return-value]

    def sample_rng(self, size: str, seed: int, index: int) -> np.random.Generator:
        """The generator of sample ``index``: deterministic in (workload, size, seed, index)."""
        return np.random.default_rng([self.sample_stream, SIZES.index(size), seed, index])


def seeded(model: torch.nn.Module, seed: int, scale: float = 1.0) -> torch.nn.Module:
    """``model`` with every parameter redrawn from N(0, scale^2 / fan_in) by a generator seeded with ``seed``.

    The global torch RNG is left untouched; biases (1-d parameters) get a small N(0, 0.1^2).
    """
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            fan_in = parameter.shape[-1] if parameter.dim() > 1 else 1
            std = scale / fan_in**0.5 if parameter.dim() > 1 else 0.1
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * std)
    return model.eval()


def standard_normal_(weight: torch.Tensor, seed: int) -> None:
    """Redraw ``weight`` in place from N(0, 1) (embeddings whose rows must differ clearly), by a generator
    of its own seeded with ``seed + 1`` (not ``seeded``'s stream)."""
    import torch

    generator = torch.Generator().manual_seed(seed + 1)
    weight.copy_(torch.randn(weight.shape, generator=generator))
