"""Offline throughput by batch size, measured in one run: does the chosen batch beat batch 1?

Runs ``accelbench run --scenarios offline --batch-sweep 1,4,8`` (quick rules; every cell sweeps the
batches in one process, one unscored LoadGen run each, outputs checked row by row, then runs its scored
trial at the best verified batch) and prints, per cell, LoadGen's samples/s at each batch, the chosen
batch, its ratio to batch 1, and the scored trial's figure and status. The sweep's points of one cell
run back to back in one process, so a row compares like with like; rows are not interleaved with each
other. Usage: ``python benchmarks/batch_throughput.py [--stacks torch-inductor,onnxruntime,torch-eager]
[--workloads resnet50,bert-base] [--batches 1,4,8] [--size standard] [--store DIR]``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from _cli import run_json


def rows(document: dict[str, Any]) -> list[list[str]]:
    """One row per offline cell of the run's JSON document."""
    table = []
    for result in document["results"]:
        sweep = (result.get("settings") or {}).get("batch_sweep")
        if not sweep:
            continue
        rate = {p["batch"]: p["samples_per_s"] for p in sweep["points"] if not p["reason"]}
        base, chosen = rate.get(1), sweep["chosen"]
        figures = result.get("figures") or {}
        gain = f"{rate[chosen] / base:.2f}" if base and chosen in rate else "-"
        cells = [f"{rate[b]:.1f}" if b in rate else "x" for b in sorted(p["batch"] for p in sweep["points"])]
        cell = result["cell"]
        scored = f"{figures.get('value', 0.0):.1f} @ b{figures.get('batch', '-')}"
        table.append([cell["workload"], cell["stack"], *cells, str(chosen), gain, scored, result["status"]])
    return table


def main() -> None:
    """Parse the options, run the sweep, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stacks", default="torch-inductor,onnxruntime,torch-eager")
    parser.add_argument("--workloads", default="resnet50,bert-base")
    parser.add_argument("--batches", default="1,4,8")
    parser.add_argument("--size", default="standard")
    parser.add_argument("--store", type=Path, default=None)
    args = parser.parse_args()
    store = args.store or Path(tempfile.mkdtemp(prefix="batch-throughput-")) / "store"
    document = run_json(
        store, "--suite", "default", "--scenarios", "offline", "--stacks", args.stacks, "--workloads",
        args.workloads, "--size", args.size, "--batch-sweep", args.batches, "--no-probe",
    )  # fmt: skip
    batches = [f"b{b} /s" for b in args.batches.split(",")]
    header = ["workload", "stack", *batches, "chosen", "x b1", "scored /s", "status"]
    table = [header, *rows(document)]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    print(f"offline samples/s by batch (LoadGen, quick rules, {args.size} size); x = refused or not verified")
    for row in table:
        print("  ".join(value.rjust(width) for value, width in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
