"""Training to quality: the ``train-to-quality`` scenario with MLPerf Training's timing, on offline data.

A training workload (``workloads.py``) names a model, a labelled data set with a fixed held-out split
(``data.py``) and a recipe (batch, learning rate, quality target, max epochs). ``measure.py`` runs a cell:
N runs, each timed from MLPerf's ``run_start`` to ``run_stop`` (``loop.py``), logged through
``mlperf_logging.mllog`` (``mllog.py``), optionally data parallel over ``nproc`` processes
(``distributed.py``), summarised by an olympic mean (``summary.py``), in the precision the stack declares
(``precision.py``: TF32 off unless declared). The rule set is accelbench's ``short`` (``rules.py``), not
MLPerf Training's rules, and results say so.
"""

from __future__ import annotations

SCENARIO = "train-to-quality"
"""The scenario name, as ``--scenarios`` spells it."""

WORKLOADS = ("digits-resnet", "topics-minilm")
"""Workloads that only run under ``train-to-quality`` (and that scenario runs only them)."""

DRIVER = "accelbench.training ('short' rules: MLPerf Training's timing and logs, not its rules)"
"""What runs the scenario, in one line (``accelbench list scenarios``)."""

__all__ = ["DRIVER", "SCENARIO", "WORKLOADS"]
