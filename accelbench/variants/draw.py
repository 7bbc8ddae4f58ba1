"""Draw a workload's variant from its name: seeded mutations, redrawn until its FLOPs are in the band.

The generator is the workload's own ``draw_changes``; this module seeds it, counts the FLOPs of the
result (``accelbench.workloads.flops.count_flops`` over the architecture on fake tensors, so nothing
is computed) and redraws until ``FLOPS_BAND`` holds. Same (workload, size, name)
gives the same variant on every machine: numpy's seeded generator and pure shape arithmetic only.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from accelbench.errors import Unsupported
from accelbench.sections import VariantInfo, VariantMutation
from accelbench.variants.names import CANONICAL, parse_name
from accelbench.workloads.base import SIZES, Variant, Workload

log = logging.getLogger(__name__)

FLOPS_BAND = (0.5, 2.0)
"""A variant's FLOPs per sample stay within this factor range of the canonical model's."""
MAX_DRAWS = 64
"""Redraws allowed before a variant whose FLOPs never land in the band is unsupported."""
_STREAM = 0x7A41


@dataclass(frozen=True, slots=True)
class DrawnVariant:
    """A variant with what was learnt drawing it: its FLOPs and the canonical model's."""

    variant: Variant
    variant_seed: int
    index: int
    flops: int
    canonical_flops: int
    draws: int
    """How many draws it took to land in ``FLOPS_BAND``."""

    @property
    def flops_ratio(self) -> float:
        """Variant FLOPs / canonical FLOPs."""
        return self.flops / self.canonical_flops


def draw_variant(workload: Workload, size: str, name: str) -> DrawnVariant:
    """The variant ``name`` (``s<seed>-v<index>``) of ``workload`` at ``size``.

    Raises Unsupported when the workload has no generator or no draw lands in ``FLOPS_BAND``.
    """
    variant_seed, index = parse_name(name)
    canonical = count_flops(workload, size, None)
    for attempt in range(MAX_DRAWS):
        rng = np.random.default_rng(
            [_STREAM, _tag(workload.name), SIZES.index(size), variant_seed, index, attempt]
        )
        changes, mutations = workload.draw_changes(size, rng)
        variant = Variant(name, dict(changes), tuple(mutations))
        flops = count_flops(workload, size, variant)
        if FLOPS_BAND[0] <= flops / canonical <= FLOPS_BAND[1]:
            return DrawnVariant(
                variant=variant,
                variant_seed=variant_seed,
                index=index,
                flops=flops,
                canonical_flops=canonical,
                draws=attempt + 1,
            )
    raise Unsupported(
        f"{workload.name}: no variant within {FLOPS_BAND} x canonical FLOPs in {MAX_DRAWS} draws"
    )


def count_flops(workload: Workload, size: str, variant: Variant | None) -> int:
    """FLOPs of one batch-1 forward pass of the (variant) architecture, counted on fake tensors.

    Under torch's ``FakeTensorMode`` layers and activations have shapes but no memory, so counting the
    standard ResNet-50 or BERT-base takes about a second and computes nothing. A model the fake mode
    cannot run is counted on the CPU instead.
    """
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from accelbench.workloads import flops

    example = make_sample(workload, size, 0, 0, variant)
    try:
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            model = workload.architecture(size, variant)
            inputs = tuple(mode.from_tensor(torch.from_numpy(array)) for array in example)
            return sum(flops.count_flops(model, inputs).values())
    except Exception as err:  # a data-dependent op the fake mode cannot answer
        log.info("counting %s FLOPs on the CPU: %s", workload.name, err)
    with torch.random.fork_rng(devices=[]):
        model = workload.architecture(size, variant)
    return sum(flops.count_flops(model, tuple(torch.from_numpy(a) for a in example)).values())


def variant_info(drawn: DrawnVariant) -> VariantInfo:
    """The result's ``variant_info`` section."""
    return VariantInfo(
        variant_seed=drawn.variant_seed,
        index=drawn.index,
        mutations=tuple(VariantMutation(m.kind, m.detail) for m in drawn.variant.mutations),
        changes=_plain(drawn.variant.changes),
        flops=drawn.flops,
        canonical_flops=drawn.canonical_flops,
        flops_ratio=drawn.flops_ratio,
        draws=drawn.draws,
    )


def resolve(workload: Workload, size: str, name: str) -> DrawnVariant | None:
    """None for the canonical model, else the drawn variant ``name``."""
    return None if name == CANONICAL else draw_variant(workload, size, name)


def build_model(workload: Workload, size: str, seed: int, variant: Variant | None) -> Any:
    """``workload.build_model``; the canonical model is asked for without a variant argument.

    Workloads written before variants existed (plugins) keep working for canonical cells.
    """
    if variant is None:
        return workload.build_model(size, seed)
    return workload.build_model(size, seed, variant)


def make_sample(workload: Workload, size: str, seed: int, index: int, variant: Variant | None) -> Any:
    """``workload.make_sample``, canonical without a variant argument (see ``build_model``)."""
    if variant is None:
        return workload.make_sample(size, seed, index)
    return workload.make_sample(size, seed, index, variant)


def _tag(name: str) -> int:
    return zlib.crc32(name.encode())


def _plain(changes: Mapping[str, Any]) -> dict[str, Any]:
    return {key: list(value) if isinstance(value, tuple) else value for key, value in changes.items()}
