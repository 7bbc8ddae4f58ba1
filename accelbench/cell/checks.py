"""A trial's checks against the fp32 eager reference, in the cell process: the reference as a function of
one sample, the workload's sanity check, and the post-run audits on fresh samples
(``accelbench.audits.post_run``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from accelbench.audits import post_run
from accelbench.cell.samples import SampleSets
from accelbench.head import Quality
from accelbench.workloads.base import Inputs, Variant, Workload


def post_run_checks(
    workload: Workload,
    size: str,
    sets: SampleSets,
    one: Callable[[Inputs], np.ndarray],
    reference: Callable[[Inputs], np.ndarray],
    effective_precision: str,
) -> post_run.PostRun:
    from accelbench.meters.quality import sample_budget

    fresh = sets.alternate(post_run.samples_needed())
    budget = sample_budget(effective_precision, workload.name, size)
    return post_run.post_run_audits(
        one,
        reference,
        fresh,
        workload.quality_metric,
        effective_precision,
        sets.alternate_seed,
        budget=budget,
    )


def set_torch_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def reference_of(model: Any) -> Callable[[Inputs], np.ndarray]:
    """The fp32 eager reference as a function of one sample's inputs."""
    import torch

    def run(sample: Inputs) -> np.ndarray:
        with torch.inference_mode():
            return np.asarray(model(*(torch.from_numpy(a) for a in sample)).float().numpy())

    return run


def sanity(
    workload: Workload, size: str, infer: Callable[[Inputs], np.ndarray], variant: Variant | None
) -> Quality | None:
    from accelbench.meters.quality import sanity_quality

    if variant is None:  # workloads written before variants take no variant argument
        verdict = workload.sanity_check(size, infer)
    else:
        verdict = workload.sanity_check(size, infer, variant)
    return sanity_quality(verdict) if verdict else None
