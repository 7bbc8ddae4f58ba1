"""Seeded, near-identical variants of the workloads, to measure what stacks do on unseen models.

``variant_names(seed, n)`` names the variants a run plans; ``draw_variant(workload, size, name)`` draws
one again anywhere (the cell process does) with the workload's own generator, its FLOPs kept within
``FLOPS_BAND`` of the canonical model's; ``variant_info`` is the result's record of it.
"""

from accelbench.variants.draw import (
    FLOPS_BAND,
    MAX_DRAWS,
    DrawnVariant,
    build_model,
    count_flops,
    draw_variant,
    make_sample,
    resolve,
    variant_info,
)
from accelbench.variants.names import CANONICAL, fresh_seed, parse_name, variant_names

__all__ = [
    "CANONICAL",
    "FLOPS_BAND",
    "MAX_DRAWS",
    "DrawnVariant",
    "build_model",
    "count_flops",
    "draw_variant",
    "fresh_seed",
    "make_sample",
    "parse_name",
    "resolve",
    "variant_info",
    "variant_names",
]
