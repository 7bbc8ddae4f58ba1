"""Training rule sets, named for what they are: ``short`` is accelbench's, and none is MLPerf's.

``short`` keeps MLPerf Training's method: the time from ``run_start`` to ``run_stop`` with evaluation
inside it, N seeded runs summarised by the olympic mean (an unconverged run counts as the slowest), and logs
in MLPerf's format checked by mlperf-logging's checker (its structural rules). It is not MLPerf Training's
rules: the workloads are accelbench's small ones, not MLPerf's benchmarks and data sets; the targets,
recipes and epoch caps are accelbench's; the number of runs is ``--runs`` (MLPerf fixes it per benchmark);
nothing is reviewed. So no training rule set is called ``mlperf``, and a train-to-quality cell of a run
under a rule set whose name claims MLPerf's rules (``MLPERF_NAMES``: LoadGen's MLPerf durations) is
unsupported, saying why, rather than stored under that name.

Results stored before the training section named its rules (no ``rules`` key) ran under what is now
``short`` and load as ``short``; so does a stored name in ``ALIASES``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accelbench.errors import Unsupported, UserError


@dataclass(frozen=True, slots=True)
class TrainingRules:
    """A training rule set: its name, whether it is MLPerf Training's own, and what it keeps and drops."""

    name: str
    follows_mlperf: bool
    summary: str


SHORT = TrainingRules(
    name="short",
    follows_mlperf=False,
    summary="accelbench's short training rules: MLPerf Training's timing (run_start to run_stop, evaluation "
    "inside), olympic mean and log format, on accelbench's small workloads with its own targets and "
    "recipes; not MLPerf Training's rules",
)
RULES: Mapping[str, TrainingRules] = {SHORT.name: SHORT}
"""The training rule sets by name."""
MLPERF_NAMES = ("official", "mlperf")
"""Run rule-set names that claim MLPerf's rules, which no training workload here follows."""
ALIASES: Mapping[str, str] = {"official": SHORT.name}
"""Names a stored training result may carry for a rule set, and the rule set they mean."""


def for_run(run_rules: str) -> TrainingRules:
    """The training rules of a cell in a run under ``run_rules`` (``--rules``); Unsupported for MLPerf's."""
    if run_rules in MLPERF_NAMES:
        raise Unsupported(
            f"--rules {run_rules} claims MLPerf's rules, which train-to-quality does not follow: it runs "
            f"under accelbench's '{SHORT.name}' training rules (MLPerf's timing and logs, accelbench's "
            "workloads and targets); run it under --rules quick or standard"
        )
    return SHORT


def stored(section: Mapping[str, Any]) -> TrainingRules:
    """The rule set a stored ``training`` section ran under (``short`` when it names none)."""
    name = str(section.get("rules") or SHORT.name)
    name = ALIASES.get(name, name)
    if name not in RULES:
        raise UserError(f"unknown training rules {name!r} in a stored result; known: {', '.join(RULES)}")
    return RULES[name]
