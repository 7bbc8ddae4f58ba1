"""The expressiveness suite: work that is not dense matmul ("AI acceleration 2.0").

Each module is one ordinary ``Workload`` (seeded weights, inputs from (size, seed, index), cosine quality
gate), so the runner, isolation, LoadGen scenarios and quality gate apply unchanged:

* ``gnn-sage``: graph message passing (gather + scatter-add over a seeded irregular graph);
* ``dlrm-bags``: embedding-bag recommender (sparse lookups with offsets, MLPs, pairwise interaction);
* ``moe-topk``: mixture of experts with data-dependent top-k routing and token dispatch;
* ``ssm-scan``: a selective-scan state-space recurrence, sequential over time;
* ``dynamic-seq``: an attention encoder whose every sample has its own sequence length.
"""

from __future__ import annotations

EXPRESSIVE_WORKLOADS: tuple[str, ...] = ("gnn-sage", "dlrm-bags", "moe-topk", "ssm-scan", "dynamic-seq")
"""Names of the expressiveness workloads, in the order the suite and its matrix list them."""

__all__ = ["EXPRESSIVE_WORKLOADS"]
