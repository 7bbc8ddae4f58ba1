"""How far honest stacks stay from each audit's threshold, and how many cells the audits disqualified.

Reads stored runs (``make run`` writes them to ``accelbench-results``) and prints, per audit, the worst
honest figure over every audited cell of the runs, the threshold, and the margin (how many times the
figure would have to grow or shrink to cross it; above 1 is safe). Then one line per run: the cells
by status, the disqualified ones named. Usage:
``python benchmarks/audit_margins.py [--store accelbench-results] [--last 3 | RUN_ID ...]``.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from accelbench.audits import failed_audits
from accelbench.results import Result
from accelbench.store import open_store

Audit = Mapping[str, Any]


def repeat_margin(audit: Audit) -> tuple[float, float, float] | None:
    """The lower CI bound of the seen/never-seen ratio nearest its window's limit (over the run's windows,
    the sighting-count windows kept and the timed traffic's), that limit, and the margin."""
    entry = audit.get("repeat") or {}
    windows = [*(entry.get("windows") or []), *(entry.get("sighting_windows") or [])]
    windows += entry.get("traffic_windows") or []
    if not windows:
        return None
    worst = min(windows, key=lambda w: w.get("limit", entry["limit"]) / w["ratio_low"])
    limit = worst.get("limit", entry["limit"])
    return worst["ratio_low"], limit, limit / worst["ratio_low"]


def caching_margin(audit: Audit) -> tuple[float, float, float] | None:
    """Immediate-repeat speedup vs its limit (the share condition must hold too, so this understates)."""
    entry = audit.get("caching") or {}
    if entry.get("speedup") is None:
        return None
    return entry["speedup"], entry["limit"], entry["limit"] / entry["speedup"]


def output_margin(audit: Audit) -> tuple[float, float, float] | None:
    """Worst ratio of the nearest other reference's distance to the own reference's (must stay > 1)."""
    entry = audit.get("output") or {}
    worst = entry.get("worst_margin")
    if worst is None:
        return None
    return worst, 1.0, worst


def precision_margin(audit: Audit) -> tuple[float, float, float] | None:
    """Largest normalised error vs the declared precision's budget."""
    entry = audit.get("precision") or {}
    if entry.get("budget") is None:
        return None
    error = entry["max_norm_abs_err"]
    return error, entry["budget"], entry["budget"] / error if error else float("inf")


def alternate_margin(audit: Audit) -> tuple[float, float, float] | None:
    """Quality on the alternate seed vs its bar, as the ratio of the slack to the shortfall from 1."""
    entry = audit.get("alternate_seed") or {}
    if "value" not in entry:
        return None
    value, threshold = entry["value"], entry["threshold"]
    missing = 1.0 - value
    return value, threshold, (1.0 - threshold) / missing if missing > 0 else float("inf")


def llm_repeat_margin(audit: Audit) -> tuple[float, float, float] | None:
    """LLM: the median repeat / never-seen ratio (TTFT or TPOT) nearest its bar (must stay above)."""
    entry = audit.get("repeat") or {}
    if "ttft_median" not in entry:
        return None
    tpot_bar = entry.get("tpot_bar", entry["ratio_bar"])
    ttft = (entry["ttft_median"], entry["ratio_bar"], entry["ttft_median"] / entry["ratio_bar"])
    tpot = (entry["tpot_median"], tpot_bar, entry["tpot_median"] / tpot_bar)
    return min(ttft, tpot, key=lambda row: row[2])


def first_token_margin(audit: Audit) -> tuple[float, float, float] | None:
    """LLM: the lowest TTFT / own TPOT of a reply vs the floor (3 replies and 5% below it fail)."""
    entry = audit.get("first_token") or {}
    if not entry.get("lowest_ratios"):
        return None
    figure = entry["lowest_ratios"][0]
    return figure, entry["floor"], figure / entry["floor"]


def prefix_cache_margin(audit: Audit) -> tuple[float, float, float] | None:
    """LLM: repeated/never-seen TTFT ratio after the run vs its bar (must stay above)."""
    entry = audit.get("prefix_cache") or {}
    if "ratio" not in entry:
        return None
    return entry["ratio"], entry["bar"], entry["ratio"] / entry["bar"]


MARGINS: dict[str, Callable[[Audit], tuple[float, float, float] | None]] = {
    "output": output_margin,
    "repeat": repeat_margin,
    "llm repeat": llm_repeat_margin,
    "first_token": first_token_margin,
    "prefix_cache": prefix_cache_margin,
    "caching": caching_margin,
    "alternate_seed": alternate_margin,
    "precision": precision_margin,
}


def margin_table(results: Sequence[Result]) -> list[str]:
    """One line per audit: cells, worst honest figure, threshold, smallest margin, failures."""
    header = f"{'audit':<15} {'cells':>5} {'worst figure':>13} {'threshold':>10} {'margin':>9} {'failed':>6}"
    lines = [header + "  worst cell"]
    audited = [r for r in results if r.audit]
    for name, margin in MARGINS.items():
        rows = [(m, r) for r in audited if r.audit and (m := margin(r.audit.to_dict())) is not None]
        failed = sum(1 for _, r in rows if name.removeprefix("llm ") in failed_audits(r.audit))
        if not rows:
            lines.append(f"{name:<15} {0:>5}")
            continue
        (figure, threshold, smallest), worst = min(rows, key=lambda row: row[0][2])
        lines.append(
            f"{name:<15} {len(rows):>5} {figure:>13.4g} {threshold:>10.4g} {smallest:>9.3g} {failed:>6}  "
            f"{worst.cell.key}"
        )
    return lines


def status_line(run_id: str, results: Sequence[Result]) -> str:
    counts = Counter(r.head.status for r in results)
    disqualified = [
        f"{r.cell.key} ({r.head.reason[:80]})" for r in results if r.head.status == "disqualified"
    ]
    text = ", ".join(f"{status} {count}" for status, count in sorted(counts.items()))
    return f"{run_id}: {text}" + (f"; disqualified: {'; '.join(disqualified)}" if disqualified else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", help="run ids (default: the last --last runs)")
    parser.add_argument("--store", type=Path, default=Path("accelbench-results"))
    parser.add_argument("--last", type=int, default=3)
    args = parser.parse_args()
    with open_store(args.store) as store:
        run_ids = args.runs or store.run_ids()[: args.last][::-1]
        by_run = {run_id: store.results(run_id) for run_id in run_ids}
    everything = [r for results in by_run.values() for r in results]
    print(f"honest margins over {len(run_ids)} run(s), {len(everything)} cells")
    print("\n".join(margin_table(everything)))
    for run_id, results in by_run.items():
        print(status_line(run_id, results))
    total = sum(1 for r in everything if r.head.status == "disqualified")
    print(f"disqualified cells: {total} of {len(everything)}")


if __name__ == "__main__":
    main()
