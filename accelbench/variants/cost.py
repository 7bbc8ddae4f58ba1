"""The cost of a workload's variant by name: drawn again from its name, counted once, cached.

FLOP and byte counting itself is ``accelbench.workloads.flops`` (used by the variants' draw too).
"""

from __future__ import annotations

from pathlib import Path

from accelbench import registry, variants
from accelbench.workloads.flops import WorkloadCost, model_cost, read_cost_cache, write_cost_cache


def workload_cost(
    workload_name: str,
    size: str,
    seed: int = 0,
    cache_dir: Path | None = None,
    variant: str = "canonical",
) -> WorkloadCost:
    """The cost of ``workload_name`` (``variant``) at ``size``: from ``cache_dir``'s JSON, else counted.

    ``seed`` only seeds the weights and the sample; shapes, hence the cost, do not depend on it.
    A variant is drawn again from its name (``accelbench.variants``), so it has its own cost.
    """
    key = f"{workload_name}/{size}" + ("" if variant == variants.CANONICAL else f"/{variant}")
    cached = read_cost_cache(cache_dir).get(key) if cache_dir else None
    if cached is not None:
        return WorkloadCost.from_dict(cached)
    reference = registry.resolve("workload", (workload_name,))[workload_name]
    workload = registry.instantiate(reference)
    drawn = variants.resolve(workload, size, variant)
    shape = drawn.variant if drawn else None
    model = variants.build_model(workload, size, seed, shape)
    sample = variants.make_sample(workload, size, seed, 0, shape)
    cost = model_cost(model, sample, workload_name, size)
    if cache_dir:
        write_cost_cache(cache_dir, key, cost)
    return cost
