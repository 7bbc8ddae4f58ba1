"""Regenerate the LoadGen golden logs in this folder: ``python tests/golden/loadgen/regenerate.py``.

Each case runs the real LoadGen through ``accelbench.scenarios.loadgen.measure`` on a 64x64 matmul plus
a 1 ms sleep. The summary is kept whole; the detail log keeps only the records the parser reads and a
few for provenance (the rest, e.g. LoadGen's 3 KB file-hash record, is dropped line by line, unedited).
The values asserted in ``tests/unit/test_loadgen_log.py`` must be updated after regenerating.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from accelbench.scenarios.loadgen import DETAIL_FILE, SUMMARY_FILE, measure
from accelbench.scenarios.rules import get_rules

HERE = Path(__file__).parent
KEPT_PREFIXES = ("error", "warning", "result_", "early_stopping")
KEPT_KEYS = (
    "loadgen_version",
    "test_datetime",
    "effective_scenario",
    "effective_test_mode",
    "effective_samples_per_query",
    "effective_target_qps",
    "effective_target_latency_ns",
    "effective_min_duration_ms",
    "effective_min_query_count",
    "generic_message",
    "num_errors",
)


def _infer(inputs: tuple[np.ndarray, ...]) -> np.ndarray:
    time.sleep(0.001)
    return inputs[0] @ inputs[0].T


def _cases() -> dict[str, tuple[str, dict[str, Any], float | None]]:
    """name -> (scenario, rule overrides, latency_s given to LoadGen instead of calibrating)."""
    return {
        "single_stream": ("single-stream", {}, None),
        "offline": ("offline", {}, None),
        "multi_stream": ("multi-stream", {}, None),
        "server": ("server", {}, None),
        "single_stream_ran_out": ("single-stream", {}, 0.05),
        "offline_too_short": ("offline", {}, 0.01),
        "server_over_bound": (
            "server",
            {
                "server_latency_bound_s": 0.0005,
                "server_latency_bound_factor": 0.0,
                "server_min_duration_s": 1.0,
            },
            None,
        ),
    }


def _kept(detail: str) -> str:
    lines = []
    for line in detail.splitlines():
        key = json.loads(line.removeprefix(":::MLLOG "))["key"]
        if key in KEPT_KEYS or key.startswith(KEPT_PREFIXES):
            lines.append(line)
    return "\n".join(lines) + "\n"


def main() -> None:
    """Run every case and write ``<case>_summary.txt`` and ``<case>_detail.txt`` here."""
    rng = np.random.default_rng(0)
    samples = [(rng.standard_normal((64, 64)).astype(np.float32),) for _ in range(16)]
    for name, (scenario, overrides, latency_s) in _cases().items():
        rules = dataclasses.replace(get_rules("quick"), **overrides)
        with tempfile.TemporaryDirectory() as tmp:
            measure(scenario, _infer, samples, rules, Path(tmp), latency_s=latency_s)
            summary = (Path(tmp) / SUMMARY_FILE).read_text()
            detail = (Path(tmp) / DETAIL_FILE).read_text()
        (HERE / f"{name}_summary.txt").write_text(summary)
        (HERE / f"{name}_detail.txt").write_text(_kept(detail))
        print(name, "written")


if __name__ == "__main__":
    main()
