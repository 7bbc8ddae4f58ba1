"""The ``generation`` section of a generative cell's result, and its LoadGen figures as a ``Figures``.

Every timed figure is LoadGen's own (token mode: TTFT from issue to ``FirstTokenComplete``, TPOT =
(latency - TTFT) / (tokens - 1) per query, MLPerf's definition); the few that LoadGen does not log are
labelled ``sut`` (the generator's own clock):

* ``prefill_tokens_per_s_sut``: prompt tokens / the SUT's time to first token, median over the replies;
* ``decode_tokens_per_s``: 1 / LoadGen's mean TPOT;
* ``goodput_qps_sut`` (server): replies meeting both bounds per second;
* ``kv_cache_bytes_per_token_fp32``: 2 (K and V) x layers x KV heads x head dim x 4 bytes, from the
  model's config; the stack's own KV precision may be lower (it states its precision).

For the roofline and per-chip figures a generative cell's "sample" is one query (a reply): its cost
(``query_cost``) is the dense-decoder estimate 2 x parameters x (prompt + reply tokens) FLOPs, and the
weights read once per decode step (fp32 bytes), attention's own FLOPs and the KV cache traffic left out.

The headline (``Figures``) follows the scenario as for every workload: single-stream LoadGen's p90 query
latency, offline samples (replies) per second, server the searched max QPS; tokens/s, TTFT and TPOT are
in the section and in the report's LLM table.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from accelbench.files import read_json
from accelbench.generation.loadgen_tokens import TokenFigures
from accelbench.generation.quality import Agreement, ReplyCheck
from accelbench.loadgen_figures import HEADLINES, Figures
from accelbench.sections import GenerationFigures
from accelbench.workloads.flops import WorkloadCost, cost_of

PERCENTILES = (50.0, 90.0, 99.0)


def kv_cache_bytes_per_token(model_folder: Path) -> int:
    """fp32 K+V bytes one token occupies in the cache, from the model's ``config.json``."""
    config = read_json(model_folder / "config.json", "model config")
    heads = int(config["num_attention_heads"])
    head_dim = int(config.get("head_dim") or int(config["hidden_size"]) // heads)
    kv_heads = int(config.get("num_key_value_heads") or heads)
    return 2 * int(config["num_hidden_layers"]) * kv_heads * head_dim * 4


def section(
    run: TokenFigures,
    prompt_tokens: Sequence[int],
    quality: Agreement,
    checks: Sequence[ReplyCheck],
    facts: Mapping[str, Any],
) -> dict[str, Any]:
    """The stored ``generation`` section: LoadGen's token figures of the scored run, the quality checks
    and the stack's facts (precision, weight format, conversion_s, model, bounds)."""
    replies = run.replies
    prefill = [
        n / r.first_token_s for n, r in zip(prompt_tokens, replies, strict=True) if r.first_token_s > 0
    ]
    return {
        **facts,
        "scenario": run.scenario,
        "valid": run.valid,
        "invalid_reasons": list(run.invalid_reasons),
        "queries": run.queries,
        "output_tokens": sum(len(r.tokens) for r in replies),
        "mean_prompt_tokens": statistics.fmean(prompt_tokens) if prompt_tokens else None,
        "mean_output_tokens": statistics.fmean(len(r.tokens) for r in replies) if replies else None,
        "ttft_mean_s": run.ttft_mean_s,
        "ttft_percentiles_s": _percentiles(run.ttft_percentiles_s),
        "tpot_mean_s": run.tpot_mean_s,
        "tpot_percentiles_s": _percentiles(run.tpot_percentiles_s),
        "latency_mean_s": run.latency_mean_s,
        "tokens_per_s": run.tokens_per_s,
        "decode_tokens_per_s": 1.0 / run.tpot_mean_s if run.tpot_mean_s else None,
        "prefill_tokens_per_s_sut": statistics.median(prefill) if prefill else None,
        "goodput_qps_sut": run.goodput_qps,
        "bounds": None if run.bounds is None else _bounds(run),
        "agreement": {
            "identical_share": quality.identical_share,
            "identical_replies": quality.identical_replies,
            "replies": len(quality.first_divergence),
            "first_divergence": list(quality.first_divergence),
            "tie_divergences": quality.tie_divergences,
            "threshold": quality.threshold,
            "passed": quality.passed,
            "detail": quality.detail,
        },
        "checks": {c.name: {"passed": c.passed, "value": c.value, "detail": c.detail} for c in checks},
    }


def _percentiles(values: Mapping[float, float]) -> dict[str, float]:
    return {f"p{p:g}": values[p] for p in PERCENTILES if p in values}


def _bounds(run: TokenFigures) -> dict[str, Any]:
    assert run.bounds is not None
    return {"ttft_s": run.bounds.ttft_s, "tpot_s": run.bounds.tpot_s, "source": run.bounds.source}


def figures_of(runs: Sequence[TokenFigures], max_qps: float | None = None) -> Figures:
    """LoadGen's headline of the scenario over ``runs`` (server: ``max_qps`` from the search)."""
    first = runs[0].summary
    if first is None:
        raise ValueError("token figures without LoadGen's summary")
    scenario = first.scenario
    summaries = [r.summary for r in runs if r.summary is not None]
    values = [_headline(scenario, s, max_qps) for s in summaries]
    value = statistics.fmean(values)
    p = {q: statistics.fmean(s.latency_percentiles_s.get(q, 0.0) for s in summaries) for q in PERCENTILES}
    sut = statistics.fmean(reply.latency_s for run in runs for reply in run.replies)
    loadgen = statistics.fmean(s.mean_latency_s for s in summaries)
    return Figures(
        scenario=scenario,
        metric=HEADLINES[scenario],
        value=value,
        ci=(min(values), max(values)),
        trial_values=tuple(values),
        qps=statistics.fmean(s.qps for s in summaries),
        p50_s=p[50.0],
        p90_s=p[90.0],
        p99_s=p[99.0],
        early_stopping_s=None,
        valid=all(r.valid for r in runs),
        batch=1,
        sut_s=sut,
        loadgen_s=loadgen,
        timer_ratio=sut / loadgen if loadgen > 0 else 0.0,
    )


def _headline(scenario: str, summary: Any, max_qps: float | None) -> float:
    if scenario == "server":
        return float(max_qps or 0.0)
    if scenario == "single-stream":
        return float(summary.target_latency_s or summary.latency_percentiles_s.get(90.0, 0.0))
    return float(summary.samples_per_s or summary.qps)


def query_cost(workload: str, size: str, generation: GenerationFigures) -> WorkloadCost:
    """The FLOPs and bytes of one mean query of a generative cell (see the module text)."""
    params = generation.params
    prompt = generation.mean_prompt_tokens or 0.0
    reply = generation.mean_output_tokens or 0.0
    flops = int(2 * params * (prompt + reply))
    weights = 4 * params
    method = "2 x params x (prompt + reply tokens); fp32 weights read once per decode step"
    return cost_of(workload, size, flops, weights, int(weights * (max(reply, 1.0) - 1)), method)
