"""LoadGen's figures end to end: headline per scenario, server search, batching, trials in fresh processes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cli import accelbench, measured_ok
from tests.e2e.shared_run import TinyRun


def _run(store: Path, *args: str) -> dict[str, dict[str, Any]]:
    done = accelbench("run", "--suite", "tiny", "--workloads", "resnet50", "--stacks", "onnxruntime",
                      "--no-probe", "--store", str(store), *args)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    shown = accelbench("show", "--json", "--store", str(store))
    assert shown.returncode == 0, shown.stderr[-2000:]
    document = json.loads(shown.stdout)
    return {r["cell"]["scenario"]: r for r in document["results"]}


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Offline at a fixed batch and server (single-stream: the shared tiny run's, ``tiny_run``)."""
    store = tmp_path_factory.mktemp("figures") / "store"
    return _run(store, "--scenarios", "offline,server", "--batch", "4")


def test_single_stream_headline_is_loadgen_early_stopping_p90_with_the_sut_timer_beside(
    tiny_run: TinyRun,
) -> None:
    result = tiny_run.result("resnet50", "onnxruntime", "single-stream")
    figures = result["figures"]
    assert measured_ok(result), (result["status"], result["reason"])
    assert figures["metric"] == "latency_p90_s" and figures["batch"] == 1
    assert (
        figures["value"] == pytest.approx(figures["early_stopping_s"])
        and figures["value"] >= figures["p90_s"]
    )
    assert figures["sut_s"] < figures["loadgen_s"] * 1.1 and figures["timer_ratio"] == pytest.approx(
        figures["sut_s"] / figures["loadgen_s"]
    )
    assert figures["trial_values"] == [figures["value"]] and figures["valid"]


def test_offline_runs_at_the_fixed_batch_and_checks_each_sample(quick: dict[str, dict[str, Any]]) -> None:
    result = quick["offline"]
    assert measured_ok(result), (result["status"], result["reason"])
    assert result["figures"]["metric"] == "samples_per_s" and result["figures"]["batch"] == 4
    assert result["settings"]["batch_size"] == 4 and result["quality"]["passed"]
    assert result["audit"]["output"]["verdict"] == "pass" and result["audit"]["repeat"]["verdict"] == "pass"
    assert result["figures"]["value"] == pytest.approx(result["loadgen"]["qps"], rel=1e-6)


def test_server_headline_is_the_searched_max_qps_with_its_probes(quick: dict[str, dict[str, Any]]) -> None:
    result = quick["server"]
    search, figures = result["server_search"], result["figures"]
    assert 2 <= len(search["probes"]) <= 5  # quick rules: 5 probes at most
    valid = [p["target_qps"] for p in search["probes"] if p["valid"]]
    # a scored run INVALID at the searched target backs off one step each time (server_search.BACKOFF)
    lowered = max(valid, default=0.0) * search["backoff"] ** len(search["scored_failures"])
    assert figures["metric"] == "max_qps" and figures["value"] == search["max_qps"] == pytest.approx(lowered)
    assert all(not f["valid"] and f["target_qps"] > search["max_qps"] for f in search["scored_failures"])
    assert all(p["p99_s"] <= search["bound_s"] for p in search["probes"] if p["valid"])
    assert result["settings"]["loadgen"]["server_target_qps"] == pytest.approx(search["max_qps"])
    assert result["status"] in ("ok", "invalid", "unstable"), result["reason"]


@pytest.mark.slow
def test_standard_rules_run_three_trials_in_fresh_processes(tmp_path: Path) -> None:
    result = _run(tmp_path / "store", "--scenarios", "single-stream", "--rules", "standard")["single-stream"]
    figures = result["figures"]
    assert measured_ok(result), (result["status"], result["reason"])
    assert result["settings"]["trials_in_fresh_processes"] and len(figures["trial_values"]) == 3
    assert figures["ci"][0] < figures["value"] < figures["ci"][1]
    logs = tmp_path / "store" / "runs"
    trial_dirs = sorted(p.name for p in logs.glob("*/cells/*/loadgen/a0-t*"))
    assert trial_dirs == ["a0-t0", "a0-t1", "a0-t2"]
    assert len(result["audit"]["feed_seed"]) == 3 and result["audit"]["repeat"]["verdict"] == "pass"
