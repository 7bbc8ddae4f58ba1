"""The rows of ``accelbench list workloads | stacks | scenarios`` (printed by ``report.terminal``)."""

from __future__ import annotations

from typing import Any

from accelbench import registry
from accelbench.scenarios.rules import RULES, SCENARIOS


def workload_rows() -> list[dict[str, Any]]:
    """Every registered workload: task, quality metric, sizes, the standard size described."""
    rows = []
    for name, reference in registry.table("workload").items():
        workload = registry.instantiate(reference)
        rows.append(
            {
                "name": name,
                "task": workload.task,
                "quality_metric": workload.quality_metric,
                "sizes": ["tiny", "standard"],
                "standard": workload.describe("standard"),
            }
        )
    return rows


def stack_rows() -> list[dict[str, Any]]:
    """Every registered stack: available here (on the CPU) or why not, its layers and devices, and its
    tasks (``inference``: the inference and training workloads; ``generation``: the LLM workloads;
    ``endpoint``: an LLM served behind an OpenAI-compatible endpoint, measured as a curve)."""
    inference, generating = registry.table("stack"), registry.table("generating stack")
    endpoint = registry.table("endpoint stack")
    rows = []
    for name in [*registry.all_stack_names(), *endpoint]:
        reference = inference.get(name) or generating.get(name) or endpoint[name]
        try:
            stack = registry.instantiate(reference)
            reason = stack.unavailable_reason("cpu")
            layers, devices = dict(stack.layers), list(getattr(stack, "devices", ("cpu",)))
        except Exception as err:  # a broken plugin is listed, not fatal
            reason, layers, devices = f"does not load: {err}", {}, []
        tables = (("inference", inference), ("generation", generating), ("endpoint", endpoint))
        tasks = [task for task, table in tables if name in table]
        rows.append(
            {
                "name": name,
                "available": reason is None,
                "reason": reason or "",
                "layers": layers,
                "devices": devices,
                "tasks": tasks,
            }
        )
    return rows


def scenario_rows() -> list[dict[str, Any]]:
    """Every scenario with the driver that runs it and the rule sets it takes."""
    from accelbench.training import DRIVER

    return [
        {
            "name": name,
            "driver": DRIVER if name == "train-to-quality" else "MLPerf LoadGen",
            "rules": sorted(RULES) if name != "train-to-quality" else _training_rules(),
            "available": True,
        }
        for name in SCENARIOS
    ]


def _training_rules() -> list[str]:
    """The run rule sets a train-to-quality cell runs under (not the ones claiming MLPerf's rules)."""
    from accelbench.training.rules import MLPERF_NAMES

    return sorted(name for name in RULES if name not in MLPERF_NAMES)
