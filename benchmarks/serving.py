"""The serving overhead: each served deployment against the same stack in process, in one run.

Runs ``accelbench run --stacks onnxruntime --serve ray-serve,ray-serve-nobatch,triton,triton-nobatch
--scenarios single-stream,server`` on the tiny resnet50 and bert-base (quick rules) and prints, per
workload and stack, the single-stream p90 and the server scenario's searched max QPS, each with its
ratio to the in-process stack (p90: served / in-process; QPS: in-process / served, so both read "times
worse"), the server's own mean time per request where it reports one, and the statuses. Batching on/off
is the ``-nobatch`` row against the one above it. ``--show STORE`` prints the table of a finished run
instead of running one. Usage: ``python benchmarks/serving.py [--workloads resnet50,bert-base]
[--serve ray-serve,ray-serve-nobatch,triton,triton-nobatch] [--store DIR | --show DIR]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _cli import run_json

SERVER_TIME = ("server_processing_ms_mean", "server_success_ms_mean")
"""The server's own mean time per request: Ray Serve's replica processing, Triton's whole request."""


def figures(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(workload, stack) -> p90_s, max_qps, server_ms, statuses."""
    table: dict[tuple[str, str], dict[str, Any]] = {}
    for result in document["results"]:
        cell = result["cell"]
        row = table.setdefault((cell["workload"], cell["stack"]), {"statuses": []})
        row["statuses"].append(result["status"])
        if cell["scenario"] == "single-stream" and result.get("latency"):
            row["p90_s"] = result["latency"]["p90_s"]
        if cell["scenario"] == "server" and result.get("server_search"):
            row["max_qps"] = result["server_search"].get("max_qps")
            details = (result.get("settings") or {}).get("stack") or {}
            row["server_ms"] = next((details[k] for k in SERVER_TIME if k in details), None)
    return table


def rows(table: dict[tuple[str, str], dict[str, Any]]) -> list[list[str]]:
    """One printed row per (workload, stack), the in-process stack first."""
    printed = []
    for (workload, stack), row in sorted(table.items(), key=lambda item: (item[0][0], "@" in item[0][1])):
        base = table.get((workload, stack.split("@")[0]), {})
        p90, qps = row.get("p90_s"), row.get("max_qps")
        p90_ratio = f"{p90 / base['p90_s']:.1f}" if p90 and base.get("p90_s") else "-"
        qps_ratio = f"{base['max_qps'] / qps:.1f}" if qps and base.get("max_qps") else "-"
        printed.append([
            workload, stack, f"{p90 * 1e3:.2f}" if p90 else "-", p90_ratio, f"{qps:.0f}" if qps else "-",
            qps_ratio, row.get("server_ms") or "-", ",".join(row["statuses"]),
        ])  # fmt: skip
    return printed


def shown(store: Path) -> dict[str, Any]:
    """``accelbench show --json --include-unverified`` of the store's last run."""
    command = [
        sys.executable,
        "-m",
        "accelbench",
        "show",
        "--json",
        "--include-unverified",
        "--store",
        str(store),
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"accelbench show failed:\n{done.stderr[-2000:]}")
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def main() -> None:
    """Parse the options, run (or show) the cells, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="resnet50,bert-base")
    parser.add_argument("--serve", default="ray-serve,ray-serve-nobatch,triton,triton-nobatch")
    parser.add_argument("--store", type=Path, default=None)
    parser.add_argument("--show", type=Path, default=None)
    args = parser.parse_args()
    if args.show:
        document = shown(args.show)
    else:
        store = args.store or Path(tempfile.mkdtemp(prefix="serving-")) / "store"
        document = run_json(
            store, "--suite", "tiny", "--workloads", args.workloads, "--stacks", "onnxruntime",
            "--serve", args.serve, "--scenarios", "single-stream,server", "--no-probe",
        )  # fmt: skip
    header = ["workload", "stack", "ss p90 ms", "x", "max QPS", "x", "server ms", "statuses"]
    table = [header, *rows(figures(document))]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    print("serving overhead (tiny size, quick rules): x = times worse than the same stack in process")
    for row in table:
        print("  ".join(value.rjust(width) for value, width in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
