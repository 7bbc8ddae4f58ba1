"""The LLM decode workload through the command line: tiny-llama on every generating stack here.

Single-stream and offline run on every generating stack of the tiny suite; the server scenario (a
max-QPS search of LoadGen runs of 500 queries each) on torch-eager only, to keep the suite's time.
Every measured cell carries LoadGen's TTFT / TPOT / tokens/s and the token agreement; a stack that is
unavailable here is recorded so, with its reason. The per-query identity TPOT x (tokens - 1) + TTFT =
latency is checked on LoadGen's own figures in ``test_generation.test_loadgen_token_latencies``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from accelbench import registry
from accelbench.generation.models import missing_packages
from accelbench.results import SCHEMA_VERSION
from tests.e2e.cli import accelbench

pytestmark = pytest.mark.skipif(bool(missing_packages()), reason=f"llm extra missing: {missing_packages()}")
MEASURED = ("ok", "quality_failed", "unstable", "invalid", "unverified")


@pytest.fixture(scope="module")
def tiny_llama_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    store = tmp_path_factory.mktemp("llm-cli") / "store"
    args = ["run", "--suite", "tiny", "--workloads", "tiny-llama", "--scenarios", "single-stream,offline"]
    done = accelbench(*args, "--json", "--store", str(store), timeout_s=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    shown = accelbench("show", "--store", str(store))
    assert shown.returncode == 0, shown.stderr[-2000:]
    return {"document": json.loads(done.stdout), "show": shown.stdout}


@pytest.mark.slow
@pytest.mark.exhaustive  # 299 s; make test keeps the CLI server search and test_generation's stacks
@pytest.mark.timeout(1800)
def test_every_generating_stack_gets_token_figures_and_agreement(tiny_llama_run: dict[str, Any]) -> None:
    results = tiny_llama_run["document"]["results"]
    cells = {(r["cell"]["stack"], r["cell"]["scenario"]) for r in results}
    assert cells == {(s, c) for s in registry.GENERATING_STACKS for c in ("single-stream", "offline")}
    measured = [r for r in results if r["status"] != "unavailable"]
    assert {r["cell"]["stack"] for r in measured} >= {"torch-eager", "torch-compiled", "ort-genai"}
    for result in results:
        if result["status"] == "unavailable":
            assert result["reason"] and result["generation"] is None
            continue
        assert result["status"] in MEASURED, (result["cell"], result["reason"], result["stderr_tail"][-800:])
        assert result["schema_version"] == SCHEMA_VERSION
        section = result["generation"]
        assert section["tokens_per_s"] > 0 and section["queries"] >= 64
        assert 0.0 <= section["agreement"]["identical_share"] <= 1.0
        assert section["precision"] == result["effective_precision"]
        assert result["audit"]["prefix_cache"]["verdict"] == "pass", result["audit"]
        for audit in ("repeat", "first_token"):  # every stack here is honest (quantized ones: inaccurate)
            assert result["audit"][audit]["verdict"] == "pass", (result["cell"], result["audit"][audit])
        if result["cell"]["scenario"] == "single-stream":
            ttft, tpot = section["ttft_percentiles_s"], section["tpot_percentiles_s"]
            assert 0 < ttft["p50"] <= ttft["p90"] <= ttft["p99"]
            assert 0 < tpot["p50"] <= tpot["p90"] and section["ttft_mean_s"] < section["latency_mean_s"]
            assert result["figures"]["metric"] == "latency_p90_s" and result["figures"]["value"] > 0
        if section["precision"] == "fp32":  # fp32 stacks reproduce torch's greedy replies
            assert result["status"] in ("ok", "unstable"), (result["cell"], result["reason"])
            assert section["agreement"]["identical_share"] >= 0.95
            assert section["checks"]["test06"]["passed"] and section["checks"]["test09"]["passed"]
    assert "LLM decode (LoadGen token latencies)" in tiny_llama_run["show"]


@pytest.mark.exhaustive  # 141-167 s (5 LoadGen probes of 500 queries); make test keeps the search's own
# end-to-end run through the CLI (test_figures_cli, server), LoadGen's token server mode with its bounds
# and goodput (test_generation, test_generation_loadgen) and the search's unit tests
@pytest.mark.timeout(1700)
def test_server_searches_the_max_qps_under_the_ttft_and_tpot_bounds(tmp_path: Path) -> None:
    args = ["run", "--suite", "tiny", "--workloads", "tiny-llama", "--stacks", "torch-eager"]
    args += ["--scenarios", "server", "--timeout-s", "1500"]  # 4-5 probes of 500 queries: ~2.5 min when quiet
    done = accelbench(*args, "--json", "--store", str(tmp_path), timeout_s=1600)
    assert done.returncode == 0, done.stderr[-3000:]
    (result,) = json.loads(done.stdout)["results"]
    assert result["status"] in ("ok", "unstable"), (result["reason"], result["stderr_tail"][-800:])
    search, section = result["server_search"], result["generation"]
    assert search["max_qps"] > 0 and result["figures"]["value"] == search["max_qps"]
    assert all(p["target_qps"] > 0 for p in search["probes"]) and len(search["probes"]) >= 2
    bounds = section["bounds"]
    assert (bounds["ttft_s"], bounds["tpot_s"]) == (0.2, 0.05) and "floors" in bounds["source"]
    assert section["ttft_percentiles_s"]["p99"] <= bounds["ttft_s"]
    assert section["goodput_qps_sut"] is not None and section["goodput_qps_sut"] > 0
