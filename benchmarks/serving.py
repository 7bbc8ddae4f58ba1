"""The serving overhead: each served deployment against the same stack in process, in one run.

Runs ``accelbench run --stacks onnxruntime --serve ray-serve,ray-serve-nobatch,triton,triton-nobatch,
torchserve,torchserve-nobatch --scenarios single-stream,server`` on the tiny resnet50 and bert-base
(quick rules) and prints the run's serving comparisons (``accelbench.normalize.serving``, the
``serving`` section of ``show --json``): each served cell against the same stack in process, and
batching on against off, by LoadGen's headline (single-stream p90, server searched max QPS), with the
cost ratio (served / reference, "times worse") and the server's own mean time per request where it
reports one. A side that did not pass every audit gives its reason instead of a ratio. ``--show STORE``
prints the table of a finished run instead of running one. Usage: ``python benchmarks/serving.py
[--workloads resnet50,bert-base] [--serve ray-serve,...,torchserve-nobatch] [--store DIR | --show DIR]``.
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

SERVER_TIME = ("server_processing_ms_mean", "server_success_ms_mean", "server_inference_ms_mean")
"""The server's own mean time per request: Ray Serve's replica processing, Triton's whole request,
TorchServe's handler (inference) time."""


def server_ms(document: dict[str, Any]) -> dict[str, str]:
    """Served cell key -> the server's own mean ms per request, where it reports one."""
    found = {}
    for result in document["results"]:
        details = (result.get("settings") or {}).get("stack") or {}
        mean = next((details[k] for k in SERVER_TIME if k in details), None)
        if mean is not None:
            found["/".join(result["cell"][k] for k in CELL_KEY)] = mean
    return found


CELL_KEY = ("workload", "size", "variant", "stack", "device", "scenario")


def rows(document: dict[str, Any]) -> list[list[str]]:
    """One printed row per comparison of ``show --json``'s ``serving`` section (``normalize.serving``:
    LoadGen's headline figures, verified cells only; a side that is not verified gives its reason)."""
    own = server_ms(document)
    printed = []
    for c in document.get("serving", []):
        latency = c["metric"].startswith("latency_")
        scale, unit = (1e3, "ms") if latency else (1.0, "/s")
        ref, served = c["reference_value"], c["served_value"]
        cell = c["cell"].split("/")
        printed.append([
            cell[0], cell[-1], c["kind"], c["reference"], c["served"],
            f"{ref * scale:.3g} {unit}" if ref else "-", f"{served * scale:.3g} {unit}" if served else "-",
            f"{c['ratio']:.2f}x" if c["ratio"] is not None else c["reason"], own.get(c["cell"], "-"),
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
    parser.add_argument(
        "--serve", default="ray-serve,ray-serve-nobatch,triton,triton-nobatch,torchserve,torchserve-nobatch"
    )
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
    header = ["workload", "scenario", "compared", "reference", "served", "ref", "served", "cost", "server ms"]
    table = [header, *rows(document)]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    print("serving overhead (tiny size, quick rules): cost = served figure / reference's, above 1x worse")
    for row in table:
        print("  ".join(value.rjust(width) for value, width in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
