"""A new workload, written as ``docs/adding-a-workload.md`` says: the worked example its count is checked on.

``example-mlp`` is a two-layer classifier on 32 seeded features. What a developer writes for it is this
module and one line naming it: a row in ``accelbench.registry.WORKLOADS``, or (here, as a vendor's package
would) an entry point in the ``accelbench.workloads`` group (``test_adding_a_workload``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from accelbench.errors import UserError
from accelbench.workloads.base import Inputs, Variant, Workload

if TYPE_CHECKING:
    import torch

FEATURES = {"tiny": 32, "standard": 1024}
CLASSES = 10


class ExampleMlp(Workload):
    """Linear -> ReLU -> Linear; its weights and samples come from the seeds alone."""

    name: ClassVar[str] = "example-mlp"
    task: ClassVar[str] = "image-classification"
    quality_metric: ClassVar[str] = "top1"

    def input_names(self) -> tuple[str, ...]:
        """One feature vector."""
        return ("features",)

    def build_model(self, size: str, seed: int, variant: Variant | None = None) -> torch.nn.Module:
        """The classifier at ``size``, weights from a generator of its own (the global RNG untouched)."""
        import torch

        features = _features(size)
        generator = torch.Generator().manual_seed(seed)
        model = torch.nn.Sequential(
            torch.nn.Linear(features, 64), torch.nn.ReLU(), torch.nn.Linear(64, CLASSES)
        )
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.copy_(
                    torch.randn(parameter.shape, generator=generator) / parameter.shape[-1] ** 0.5
                )
        return model.eval()

    def make_sample(self, size: str, seed: int, index: int, variant: Variant | None = None) -> Inputs:
        """Sample ``index``: ``[1, features]`` float32, deterministic in (size, seed, index)."""
        rng = np.random.default_rng([0xE4A3, seed, index])
        return (rng.standard_normal((1, _features(size))).astype(np.float32),)


def _features(size: str) -> int:
    if size not in FEATURES:
        raise UserError(f"example-mlp: unknown size {size!r}")
    return FEATURES[size]
