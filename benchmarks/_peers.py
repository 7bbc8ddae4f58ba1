"""The peer clients of benchmarks/llm_endpoint_agreement.py: AIPerf and GuideLLM, each installed once in a
venv of its own under ``~/.cache/accelbench/peers/`` and run against one server; each returns its
per-request records and its own summary figures (mapped onto the table's names)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PEERS = Path.home() / ".cache" / "accelbench" / "peers"
PEER_PACKAGES = {"aiperf": "aiperf==0.13.0", "guidellm": "guidellm==0.8.1"}
CPU_TORCH = "torch==2.13.0"
"""GuideLLM pulls torch; on PyPI's default resolution that is the CUDA build (6 GB instead of 1.5 GB)."""
RUN_TIMEOUT_S = 1800


@dataclass(frozen=True, slots=True)
class Request:
    """One finished request as a client recorded it (seconds on its own clock)."""

    send_s: float
    ttft_s: float
    end_s: float
    output_tokens: int


@dataclass(frozen=True, slots=True)
class Workload:
    url: str
    model: str
    tokenizer: Path
    concurrency: int
    requests: int
    input_tokens: int
    output_tokens: int
    extra_body: dict[str, Any]
    """Fields that force the output length on this server (no fields outside its schema)."""
    prompts_file: Path | None = None
    """AIPerf's prompts (``single_turn`` JSONL: the text of accelbench's last round, salted anew), else
    synthetic ones of ``input_tokens``."""


def ensure_peer(name: str) -> tuple[Path, float]:
    """The venv of peer ``name`` (made once): its bin folder and the seconds this call spent installing."""
    venv = PEERS / PEER_PACKAGES[name].replace("==", "-")
    if (venv / ".installed").is_file():
        return venv / "bin", 0.0
    started = time.monotonic()
    PEERS.mkdir(parents=True, exist_ok=True)
    constraints = PEERS / "torch-cpu-constraints.txt"
    constraints.write_text(CPU_TORCH + "\n")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    pip = [str(venv / "bin" / "pip"), "install", "--quiet", PEER_PACKAGES[name], "-c", str(constraints)]
    subprocess.run(pip, check=True)
    (venv / ".installed").write_text(PEER_PACKAGES[name] + "\n")
    return venv / "bin", time.monotonic() - started


def run_aiperf(bin_dir: Path, work: Workload, out: Path) -> tuple[list[Request], dict[str, float]]:
    """AIPerf (no ``HF_HUB_OFFLINE``: it would resolve the local tokenizer path as a hub name; no server
    metrics: the server has none, and on 2 busy cores its collector missed heartbeats and failed a run)."""
    args = [
        str(bin_dir / "aiperf"), "profile", "-m", work.model, "--url", work.url,
        "--endpoint-type", "completions", "--streaming", "--tokenizer", str(work.tokenizer),
        *_inputs(work),
        "--output-tokens-mean", str(work.output_tokens), "--output-tokens-stddev", "0",
        "--concurrency", str(work.concurrency), "--request-count", str(work.requests),
        "--warmup-request-count", "1", "--random-seed", "1", "--artifact-dir", str(out), "--ui", "none",
        "--extra-inputs", json.dumps(work.extra_body), "--no-server-metrics",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    run(args, out / "aiperf.log", env)
    return read_aiperf(out)


def accelbench_run(args: list[str], out: Path, repo: Path) -> None:
    """``python -m accelbench run ARGS`` with ``repo``'s package: its ``--json`` document in
    ``out/accelbench.json``, its log in ``out/accelbench.log``; a failure raises with the log's last lines."""
    out.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "accelbench", "run", *args]
    with open(out / "accelbench.json", "w") as stdout, open(out / "accelbench.log", "w") as stderr:
        env = {**os.environ, "PYTHONPATH": str(repo)}
        done = subprocess.run(command, stdout=stdout, stderr=stderr, env=env, timeout=RUN_TIMEOUT_S)
    if done.returncode != 0:
        tail = (out / "accelbench.log").read_text(errors="replace").strip().splitlines()[-2:]
        raise RuntimeError(f"accelbench run exited {done.returncode}: {' | '.join(tail)}")


def aiperf_records(out: Path) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """AIPerf's per-request records in its artifact folder ``out`` (``profile_export.jsonl``) past its
    warm-up and with a first token: each one's metadata and metrics."""
    for line in (out / "profile_export.jsonl").read_text().splitlines():
        record = json.loads(line)
        meta, metrics = record["metadata"], record.get("metrics") or {}
        if meta.get("benchmark_phase") != "warmup" and "time_to_first_token" in metrics:
            yield meta, metrics


def read_aiperf(out: Path) -> tuple[list[Request], dict[str, float]]:
    """AIPerf's per-request records and its own summary figures, from its artifact folder ``out``."""
    found = []
    for meta, metrics in aiperf_records(out):
        send_s = meta["request_start_ns"] / 1e9
        ttft_s = metrics["time_to_first_token"]["value"] / 1e3
        tokens = int(metrics["output_token_count"]["value"])
        found.append(Request(send_s, ttft_s, meta["request_end_ns"] / 1e9, tokens))
    summary = json.loads((out / "profile_export_aiperf.json").read_text())
    own = {
        "ttft_p50_s": summary["time_to_first_token"]["p50"] / 1e3,
        "ttft_p90_s": summary["time_to_first_token"]["p90"] / 1e3,
        "tpot_p50_s": summary["inter_token_latency"]["p50"] / 1e3,  # AIPerf's ITL = MLPerf's TPOT
        "output_tokens_per_s": summary["output_token_throughput"]["avg"],
    }
    return found, own


def _inputs(work: Workload) -> list[str]:
    """AIPerf's prompts: the file of accelbench's texts when there is one, else synthetic ones."""
    if work.prompts_file is not None:
        kind = ["--custom-dataset-type", "single_turn", "--dataset-sampling-strategy", "sequential"]
        return ["--input-file", str(work.prompts_file), *kind]
    return ["--synthetic-input-tokens-mean", str(work.input_tokens), "--synthetic-input-tokens-stddev", "0"]


def run_guidellm(bin_dir: Path, work: Workload, out: Path) -> tuple[list[Request], dict[str, float]]:
    """GuideLLM with a scenario file; ``output_tokens`` is left out of ``data`` (it would add
    ``ignore_eos``, which ``transformers serve`` rejects with 422): the length is forced by the body."""
    out.mkdir(parents=True, exist_ok=True)
    backend = {"kind": "openai_http", "target": work.url, "model": work.model,
               "request_format": "/v1/completions", "max_tokens": work.output_tokens,
               "extras": {"body": work.extra_body}}  # fmt: skip
    spec = {
        "backend": backend,
        "profile": {"kind": "concurrent", "streams": work.concurrency},
        "tokenizer": {"kind": "huggingface_auto", "model": str(work.tokenizer)},
        "data": [{"kind": "synthetic_text", "prompt_tokens": work.input_tokens}],
        "constraints": [{"kind": "max_requests", "count": work.requests}],
        "seed": {"kind": "static", "value": 0},
        "outputs": [{"kind": "json", "path": str(out / "guidellm.json")}],
    }
    (out / "scenario.json").write_text(json.dumps({"spec": spec}))
    args = [str(bin_dir / "guidellm"), "run", "-c", str(out / "scenario.json"), "--disable-progress"]
    run(args, out / "guidellm.log", {**os.environ, "HF_HUB_OFFLINE": "1"})
    (benchmark,) = json.loads((out / "guidellm.json").read_text())["benchmarks"]
    found = []
    for record in benchmark["requests"]["successful"] or []:
        ttft_s = record["time_to_first_token_ms"] / 1e3
        found.append(
            Request(record["request_start_time"], ttft_s, record["request_end_time"], record["output_tokens"])
        )
    return found, _guidellm_own(benchmark["metrics"])


def _guidellm_own(metrics: dict[str, Any]) -> dict[str, float]:
    """GuideLLM's own summary of the successful requests, mapped onto the table's names."""
    ok = {
        name: value["successful"]
        for name, value in metrics.items()
        if isinstance(value, dict) and "successful" in value
    }
    return {
        "ttft_p50_s": ok["time_to_first_token_ms"]["median"] / 1e3,
        "ttft_p90_s": ok["time_to_first_token_ms"]["percentiles"]["p90"] / 1e3,
        "tpot_p50_s": ok["inter_token_latency_ms"]["median"] / 1e3,  # GuideLLM's ITL = MLPerf's TPOT
        "guidellm_tpot_p50_s": ok["time_per_output_token_ms"]["median"] / 1e3,  # TTFT included
        "output_tokens_per_s": ok["output_tokens_per_second"]["mean"],
    }


def run(args: list[str], log: Path, env: dict[str, str]) -> None:
    """Run a client with its output in ``log``; a failure raises with the log's last lines."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as handle:
        done = subprocess.run(args, stdout=handle, stderr=subprocess.STDOUT, env=env, timeout=RUN_TIMEOUT_S)
    if done.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        raise RuntimeError(f"{Path(args[0]).name} exited {done.returncode}: {' | '.join(tail)}")
