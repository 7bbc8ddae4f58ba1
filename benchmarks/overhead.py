"""Harness overhead per query: the null stack through accelbench (LoadGen + cell SUT) vs a bare loop.

The null stack returns at once, so the time per query that LoadGen reports for it is the harness's own
cost: LoadGen's query issue and completion, the SUT callback, output capture for the quality gate. The
bare loop calls the same null ``infer`` back to back. Usage: ``python benchmarks/overhead.py``.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
from _cli import run_json

from accelbench.stacks.base import CellContext, ModelSpec
from accelbench.stacks.null import NullStack

CALLS = 200_000


def bare_loop_s_per_call() -> float:
    """Median over 5 repeats of the per-call time of the null session in a plain loop."""
    example = (np.zeros((1, 8), dtype=np.int64),)
    spec = ModelSpec("bare", "tiny", 0, "canonical", ("input",), example)
    with tempfile.TemporaryDirectory() as tmp:
        session = NullStack().prepare(None, spec, CellContext("cpu", 1, Path(tmp), Path(tmp)))  # type: ignore[arg-type]
    repeats = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(CALLS):
            session.infer(example)
        repeats.append((time.perf_counter() - start) / CALLS)
    return float(np.median(repeats))


def main() -> None:
    """Print the table."""
    with tempfile.TemporaryDirectory() as tmp:
        document = run_json(
            Path(tmp),
            "--workloads",
            "minilm-l6",
            "--size",
            "tiny",
            "--stacks",
            "null",
            "--scenarios",
            "single-stream,offline,multi-stream,server",
            "--rules",
            "quick",
        )
    bare_s = bare_loop_s_per_call()
    print(f"bare loop: {bare_s * 1e6:.3f} us per call ({CALLS} calls, median of 5)")
    print(f"{'scenario':<14} {'queries':>8} {'accelbench us/sample':>21} {'bare us':>9} {'overhead us':>12}")
    for result in document["results"]:
        loadgen = result["loadgen"]
        per_sample_s = 1.0 / loadgen["qps"]
        print(
            f"{result['cell']['scenario']:<14} {loadgen['queries']:>8} {per_sample_s * 1e6:>21.2f} "
            f"{bare_s * 1e6:>9.3f} {(per_sample_s - bare_s) * 1e6:>12.2f}"
        )
    print("accelbench us/sample = 1 / LoadGen's scenario metric (QPS or samples/s) for the null stack.")
    print("server and multi-stream pace queries by design, so their 1/QPS is the load, not the overhead.")


if __name__ == "__main__":
    main()
