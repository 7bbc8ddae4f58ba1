"""MLPerf-format training logs through ``mlperf_logging.mllog``, and their check by MLCommons' checker.

Each run writes its own file (``result_<i>.txt``, as MLPerf submissions do) from the process of rank 0.
``check`` runs ``mlperf_logging``'s compliance checker on a log with accelbench's rule file
(``accelbench/data/mllog_rules.yaml``): the checker's built-in rule sets only accept MLPerf's own
benchmark names, so the rule file keeps the structural rules of ``training_6.1.0/common.yaml`` and names
accelbench's benchmarks (the file's header says which rules it keeps).
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from mlperf_logging.mllog import constants, mllog

RULES_FILE = "mllog_rules.yaml"
RULESET = "6.1.0"


def rules_path() -> Path:
    """The accelbench rule file for the compliance checker."""
    return Path(str(resources.files("accelbench.data").joinpath(RULES_FILE)))


class RunLog:
    """The MLPerf log of one training run, written to ``path`` (nothing is written when ``path`` is None)."""

    def __init__(self, path: Path | None):
        self.path = path
        self._logger: mllog.MLLogger | None = None
        self._handler: logging.Handler | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            base = logging.Logger(f"accelbench.mllog.{path}")
            base.propagate = False
            self._handler = logging.FileHandler(path, mode="w")
            base.addHandler(self._handler)
            self._logger = mllog.MLLogger(logger=base, default_stack_offset=2)

    def event(self, key: str, value: Any = None, **metadata: Any) -> None:
        """A point event (``:::MLLOG {"event_type": "POINT_IN_TIME", ...}``)."""
        if self._logger is not None:
            self._logger.event(key=key, value=value, metadata=metadata or None)

    def start(self, key: str, value: Any = None, **metadata: Any) -> None:
        """The start of an interval (``init_start``, ``run_start``, ``epoch_start``, ``eval_start``)."""
        if self._logger is not None:
            self._logger.start(key=key, value=value, metadata=metadata or None)

    def end(self, key: str, value: Any = None, **metadata: Any) -> None:
        """The end of an interval (``run_stop`` takes ``status``)."""
        if self._logger is not None:
            self._logger.end(key=key, value=value, metadata=metadata or None)

    def header(self, facts: Mapping[str, Any]) -> None:
        """The submission and hyperparameter events logged between ``init_start`` and ``init_stop``."""
        for key, value in facts.items():
            self.event(key, value)

    def close(self) -> None:
        """Flush and close the file."""
        if self._handler is not None:
            self._handler.close()


def header_facts(
    benchmark: str,
    platform: str,
    seed: int,
    batch: int,
    learning_rate: float,
    samples: tuple[int, int],
    precision: str,
) -> dict[str, Any]:
    """The keys ``mllog_rules.yaml`` requires once per run, in MLPerf's spelling; ``precision`` is the
    stack's declared training precision (``fp32``, ``tf32``)."""
    return {
        constants.SUBMISSION_ORG: "accelbench",
        constants.SUBMISSION_PLATFORM: platform,
        constants.SUBMISSION_DIVISION: "open",
        constants.SUBMISSION_STATUS: "research",
        constants.SUBMISSION_BENCHMARK: benchmark,
        constants.SEED: seed,
        constants.GLOBAL_BATCH_SIZE: batch,
        constants.GRADIENT_ACCUMULATION_STEPS: 1,
        constants.OPT_BASE_LR: learning_rate,
        constants.TRAIN_SAMPLES: samples[0],
        constants.EVAL_SAMPLES: samples[1],
        constants.LOWEST_NUMERICAL_PRECISION_IN_LINEAR: precision,
    }


def check(log: Path, timeout_s: float = 120.0) -> tuple[bool, str]:
    """Run the mlperf-logging compliance checker on ``log``: (passed, the checker's output)."""
    output = log.with_suffix(".compliance.txt")
    command = [
        sys.executable,
        "-m",
        "mlperf_logging.compliance_checker",
        "--usage",
        "training",
        "--ruleset",
        RULESET,
        "--config",
        str(rules_path()),
        "--log_output",
        str(output),
        str(log),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    return done.returncode == 0, (done.stdout + done.stderr).strip()
