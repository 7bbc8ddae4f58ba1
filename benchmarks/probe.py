"""Roofline probe vs the best installed library: is accelbench's measured peak really the ceiling?

Runs ``accelbench probe --json`` as a user would (fresh interpreter), then prints, per kind and dtype,
the probe's peak, the best library result measured in the same run (numpy/torch matmul at several
sizes; numpy copy and triad), and their ratio; then every measurement. A ratio at or above 0.9 means
the probe is within 10% of the best library. Usage: ``python benchmarks/probe.py [BUDGET_S] [THREADS]``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any


def probe_json(budget_s: str, threads: str) -> tuple[dict[str, Any], float]:
    """The probe's JSON document and the wall time of the whole command (interpreter start included)."""
    command = [sys.executable, "-m", "accelbench", "probe", "--json", "--budget-s", budget_s]
    command += ["--threads", threads]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall_s = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"accelbench probe failed:\n{done.stderr[-2000:]}")
    document: dict[str, Any] = json.loads(done.stdout)
    return document, wall_s


def scaled(value: float | None, unit: str) -> str:
    """GFLOP/s or GB/s."""
    if value is None:
        return "-"
    return f"{value / 1e9:.1f} {'GFLOP/s' if unit == 'flop/s' else 'GB/s'}"


def main() -> None:
    """Print the tables."""
    budget_s = sys.argv[1] if len(sys.argv) > 1 else "10"
    threads = sys.argv[2] if len(sys.argv) > 2 else str(len(os.sched_getaffinity(0)))
    document, wall_s = probe_json(budget_s, threads)
    print(f"accelbench probe --budget-s {budget_s} --threads {threads}: {wall_s:.1f} s wall (command)")
    print(f"{'kind':<6} {'dtype':<5} {'probe':>15} {'method':<22} {'best library':>15} {'library':<26} ratio")
    for peak in document["peaks"]:
        ratio = peak["ratio_to_best_library"]
        print(
            f"{peak['kind']:<6} {peak['dtype']:<5} {scaled(peak['value_per_s'], peak['unit']):>15} "
            f"{peak['method']:<22} {scaled(peak['best_library_per_s'], peak['unit']):>15} "
            f"{peak['best_library'] or '-':<26} {'-' if ratio is None else f'{ratio:.3f}'}"
        )
    print("\nmeasurements (best call of each):")
    seen: set[str] = set()
    for peak in document["peaks"]:
        for m in peak["measurements"]:
            if json.dumps(m, sort_keys=True) in seen:
                continue  # the bandwidth libraries are shared by the copy and triad peaks
            seen.add(json.dumps(m, sort_keys=True))
            rate = scaled(m["value_per_s"], peak["unit"])
            what = f"{m['kind']:<6} {m['dtype']:<5} {m['role']:<8} {m['method']:<20} size {m['size']:>10}"
            print(f"  {what} {m['best_s'] * 1e3:9.2f} ms x{m['repeats']:<3} {rate:>15}")
    print("\nlibraries:", json.dumps(document["libraries"], indent=1, sort_keys=True))
    for line in document["warnings"]:
        print("warning:", line)


if __name__ == "__main__":
    main()
