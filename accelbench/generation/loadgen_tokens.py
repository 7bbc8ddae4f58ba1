"""Run a ``Generator`` under MLPerf LoadGen's token-latency mode and read back LoadGen's own figures.

The SUT: LoadGen's issue callback puts the query samples on a queue; one worker thread (not LoadGen's)
generates each reply, calls ``FirstTokenComplete`` with the first token from the generator's first-token
callback, then ``QuerySamplesComplete`` with every token and its count (``n_tokens``), keeping each
buffer alive until the call returns. ``use_token_latencies`` is on, so LoadGen measures the time to first
token (TTFT) and the time per output token, which it defines as MLPerf does:
TPOT = (latency - TTFT) / (tokens - 1), per query.

LoadGen's seeds (the order of the prompt lengths, the server's arrivals) are drawn with ``secrets`` for
every test, and its logs are written in a vault while it runs (``accelbench.scenarios.vault``), as for
the inference cells.

Scenarios: ``single-stream`` (at least ``MIN_TOKEN_QUERIES`` queries: fewer leave TPOT's early stopping
unmet and the run INVALID), ``offline`` (one query of every sample, processed one after another;
LoadGen reports tokens/s but no TTFT/TPOT), ``server`` (Poisson arrivals at ``target_qps`` with p99
TTFT and p99 TPOT bounds, ``ServerBounds``). Figures come from LoadGen's summary and detail logs
(``accelbench.scenarios.loadgen_log`` parses them; the token fields are read here). Goodput (queries/s
whose TTFT and TPOT both meet the bounds) comes from the SUT's own per-query times, labelled so.

A reply of fewer than 2 tokens (EOS at once) has no TPOT: LoadGen counts about 0 for that query. They are
counted in ``short_replies``; more than ``SHORT_SHARE`` of the replies make the run invalid (a salted
prompt is answered by EOS alone now and then: 2 of 48 on tiny-llama's random weights; the cell checks
each against the reference's reply to the same prompt). LoadGen segfaults when the SUT breaks its protocol:
callers run this inside the cell's own process, never in a process that must survive.
"""

from __future__ import annotations

import logging
import queue
import re
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from accelbench.generation.base import Generator, Reply
from accelbench.generation.feed import FRESH, PromptFeed, Sent
from accelbench.scenarios import early_end, vault
from accelbench.scenarios.loadgen_log import Summary, parse_detail_values, parse_summary

log = logging.getLogger(__name__)

MIN_TOKEN_QUERIES = 64
SHORT_SHARE = 0.1
SUMMARY_FILE = "mlperf_log_summary.txt"
DETAIL_FILE = "mlperf_log_detail.txt"
MLPERF_LLAMA31_8B_PARAMS = 8.03e9
MLPERF_LLAMA31_8B_TTFT_S = 2.0
MLPERF_LLAMA31_8B_TPOT_S = 0.1
"""MLPerf Inference v5.1 llama3.1-8b Server bounds: p99 TTFT 2 s, p99 TPOT 100 ms."""
_TTFT_PCT = re.compile(r"^([\d.]+) percentile first token latency \(ns\)$")
_TPOT_PCT = re.compile(r"^([\d.]+) percentile time to output token \(ns\)$")
_NS = 1e-9


@dataclass(frozen=True, slots=True)
class ServerBounds:
    """p99 bounds of the server scenario, and how they were derived."""

    ttft_s: float
    tpot_s: float
    source: str


def scaled_bounds(params: int, floor_ttft_s: float = 0.0, floor_tpot_s: float = 0.0) -> ServerBounds:
    """MLPerf's llama3.1-8b server bounds scaled by the parameter ratio (work per token, and weight
    bytes at equal precision, both grow with the parameter count), raised to the given floors."""
    ratio = params / MLPERF_LLAMA31_8B_PARAMS
    ttft = max(MLPERF_LLAMA31_8B_TTFT_S * ratio, floor_ttft_s)
    tpot = max(MLPERF_LLAMA31_8B_TPOT_S * ratio, floor_tpot_s)
    source = f"llama3.1-8b p99 TTFT 2 s / TPOT 100 ms x {params / 1e6:.1f}M/8030M params" + (
        f", floors {floor_ttft_s * 1e3:g}/{floor_tpot_s * 1e3:g} ms" if floor_ttft_s or floor_tpot_s else ""
    )
    return ServerBounds(ttft, tpot, source)


@dataclass(frozen=True, slots=True)
class TokenRun:
    """How to run one LoadGen test."""

    scenario: str
    min_duration_s: float = 1.0
    min_queries: int = MIN_TOKEN_QUERIES
    expected_latency_s: float = 0.1
    """Per reply, for LoadGen's query generation (single-stream, offline)."""
    target_qps: float = 1.0
    bounds: ServerBounds | None = None


@dataclass(frozen=True, slots=True)
class TokenFigures:
    """LoadGen's token figures of one run (seconds, tokens/s) plus the SUT's own per-query times."""

    scenario: str
    valid: bool
    invalid_reasons: tuple[str, ...]
    ttft_mean_s: float | None
    ttft_percentiles_s: Mapping[float, float]
    """Keyed by percentile in percent (50.0, 90.0, 95.0, 97.0, 99.0, 99.9), as LoadGen prints them."""
    tpot_mean_s: float | None
    tpot_percentiles_s: Mapping[float, float]
    tokens_per_s: float | None
    """Single-stream: ``TPS w/o loadgen overhead``; offline: ``Tokens per second``; server:
    ``Completed tokens per second``."""
    latency_mean_s: float
    queries: int
    replies: tuple[Reply, ...]
    """The SUT's view of every reply, in completion order."""
    prompt_indices: tuple[int, ...]
    """The prompt (QSL index) each reply's prompt was made from, in ``replies``' order."""
    short_replies: int
    goodput_qps: float | None = None
    """Server: replies meeting both bounds (SUT timers) per second of the run."""
    bounds: ServerBounds | None = None
    summary: Summary | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)
    sent: tuple[Sent, ...] = ()
    """What each reply's call was sent (``accelbench.generation.feed``), in ``replies``' order."""


class _TokenSut:
    """Queue + worker thread; completes each sample with first token then all tokens."""

    def __init__(
        self,
        generator: Generator,
        prompts: Sequence[Sequence[int]],
        max_new_tokens: int,
        feed: PromptFeed | None,
    ) -> None:
        self.generator = generator
        self.prompts = prompts
        self.max_new_tokens = max_new_tokens
        self.feed = feed
        self.queue: queue.Queue[Any] = queue.Queue()
        self.replies: list[Reply] = []
        self.sent: list[Sent] = []
        self.error: BaseException | None = None
        self.failed = threading.Event()
        """Set with ``error``: LoadGen's test is then over for the caller (``scenarios.early_end``)."""
        self.worker = threading.Thread(target=self._work, name="token-sut", daemon=True)

    def issue_queries(self, samples: Sequence[Any]) -> None:
        """LoadGen's callback: hand every sample to the worker."""
        for sample in samples:
            self.queue.put(sample)

    def flush_queries(self) -> None:
        """Nothing is buffered beyond the queue."""

    def _work(self) -> None:
        while (sample := self.queue.get()) is not None:
            self._serve(sample)

    def _serve(self, sample: Any) -> None:
        import mlperf_loadgen as lg

        kept: list[np.ndarray] = []

        def first(token: int) -> None:
            data = np.array([token], np.int32)
            kept.append(data)
            lg.FirstTokenComplete([lg.QuerySampleResponse(sample.id, data.ctypes.data, data.nbytes)])

        tokens: Sequence[int] = ()
        if self.error is None:
            try:
                sent = self._prompt(int(sample.index))
                reply = self.generator.generate(sent.prompt, self.max_new_tokens, first)
                self.replies.append(reply)
                self.sent.append(sent)
                tokens = reply.tokens
            except BaseException as error:  # raised again by measure_tokens
                self.error = error
                self.failed.set()
        if not kept:
            first(0)  # LoadGen needs the first token before the completion, even of a failed sample
        data = np.array(tokens or (0, 0), np.int32)
        response = lg.QuerySampleResponse(sample.id, data.ctypes.data, data.nbytes, len(data))
        lg.QuerySamplesComplete([response])

    def _prompt(self, index: int) -> Sent:
        """The feed's prompt for this call, or without a feed the QSL's prompt ``index`` as it is."""
        if self.feed is not None:
            return self.feed.next(index)
        return Sent(tuple(self.prompts[index]), index, FRESH)


def timed_prompts(references: Sequence[Reply]) -> tuple[int, ...]:
    """Indices of the prompts whose reference reply has at least 2 tokens: the timed set.

    A reply that is EOS alone has no TPOT; such prompts are left out of LoadGen's runs (deterministic:
    the reference is greedy torch fp32), and a stack that still replies with one token is flagged.
    """
    return tuple(i for i, reply in enumerate(references) if len(reply.tokens) >= 2)


def measure_tokens(
    generator: Generator,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    run: TokenRun,
    log_dir: Path,
    feed: PromptFeed | None = None,
) -> TokenFigures:
    """Run ``generator`` under LoadGen's ``run.scenario`` over ``prompts`` (each call's prompt from
    ``feed`` when given: salted, repeats and controls); LoadGen's logs go to ``log_dir`` (created). An
    exception raised by the generator propagates at once, LoadGen left to finish by itself
    (``accelbench.scenarios.early_end``)."""
    import mlperf_loadgen as lg

    from accelbench.scenarios.loadgen import LOADGEN_SEEDS  # (imports LoadGen)

    sut = _TokenSut(generator, prompts, max_new_tokens, feed)
    sut.worker.start()
    settings = _settings(lg, run)
    for name in LOADGEN_SEEDS:  # fixed seeds would let a stack predict each query's prompt length
        setattr(settings, name, secrets.randbits(63))
    lg_sut = lg.ConstructSUT(sut.issue_queries, sut.flush_queries)
    qsl = lg.ConstructQSL(len(prompts), len(prompts), _nothing, _nothing)
    start = time.perf_counter()

    def test() -> None:
        try:
            with vault.sealed(log_dir) as sealed_dir:  # LoadGen's seeds stay out of the stack's reach
                lg.StartTestWithLogSettings(lg_sut, qsl, settings, _log_settings(lg, sealed_dir))
        finally:  # the worker completes every sample LoadGen issues until it returns, even after an error
            sut.queue.put(None)
            sut.worker.join()
            lg.DestroyQSL(qsl)
            lg.DestroySUT(lg_sut)

    early_end.run_test(test, sut.failed)
    wall_s = time.perf_counter() - start
    if sut.error is not None:
        raise sut.error
    return _figures(run, log_dir, tuple(sut.replies), tuple(sut.sent), wall_s)


def _settings(lg: Any, run: TokenRun) -> Any:
    scenarios = {
        "single-stream": lg.TestScenario.SingleStream,
        "offline": lg.TestScenario.Offline,
        "server": lg.TestScenario.Server,
    }
    if run.scenario not in scenarios:
        raise ValueError(f"unknown token scenario {run.scenario!r}; choose one of: {', '.join(scenarios)}")
    settings = lg.TestSettings()
    settings.scenario = scenarios[run.scenario]
    settings.mode = lg.TestMode.PerformanceOnly
    settings.use_token_latencies = True
    settings.min_duration_ms = round(run.min_duration_s * 1e3)
    settings.min_query_count = run.min_queries
    if run.scenario == "single-stream":
        settings.single_stream_expected_latency_ns = round(run.expected_latency_s * 1e9)
    elif run.scenario == "offline":
        settings.offline_expected_qps = 1.0 / run.expected_latency_s
    else:
        bounds = run.bounds or scaled_bounds(int(MLPERF_LLAMA31_8B_PARAMS))
        settings.server_target_qps = run.target_qps
        settings.ttft_latency = round(bounds.ttft_s * 1e9)
        settings.tpot_latency = round(bounds.tpot_s * 1e9)
    return settings


def _log_settings(lg: Any, log_dir: Path) -> Any:
    log_settings = lg.LogSettings()
    log_settings.log_output.outdir = str(log_dir)
    log_settings.log_output.copy_summary_to_stdout = False
    log_settings.enable_trace = False
    return log_settings


def _nothing(indices: Sequence[int]) -> None:
    """QSL load/unload callback: the prompts are already in memory."""


def _figures(
    run: TokenRun, log_dir: Path, replies: tuple[Reply, ...], sent: tuple[Sent, ...], wall_s: float
) -> TokenFigures:
    summary = parse_summary((log_dir / SUMMARY_FILE).read_text())
    detail = parse_detail_values((log_dir / DETAIL_FILE).read_text())
    extra = summary.extra
    short = sum(len(r.tokens) < 2 for r in replies)
    many = short > SHORT_SHARE * len(replies)
    word = f"{short} of {len(replies)} replies under 2 tokens (no TPOT; bar {SHORT_SHARE:.0%})"
    reasons = summary.invalid_reasons + ((word,) if many else ())
    bounds = run.bounds if run.scenario == "server" else None
    return TokenFigures(
        scenario=summary.scenario,
        valid=summary.valid and not many,
        invalid_reasons=reasons,
        ttft_mean_s=_ns(extra.get("Mean First Token latency (ns)")),
        ttft_percentiles_s=_percentiles(extra, _TTFT_PCT),
        tpot_mean_s=_ns(extra.get("Mean Time per Output Token (ns)")),
        tpot_percentiles_s=_percentiles(extra, _TPOT_PCT),
        tokens_per_s=tokens_per_s(summary.scenario, extra),
        latency_mean_s=summary.mean_latency_s,
        queries=len(replies),
        replies=replies,
        prompt_indices=tuple(s.base for s in sent),
        short_replies=short,
        goodput_qps=_goodput(replies, bounds, wall_s) if bounds else None,
        bounds=bounds,
        summary=summary,
        detail={k: v for k, v in detail.items() if k.startswith(("result_", "early_stopping"))},
        sent=sent,
    )


def tokens_per_s(scenario: str, extra: Mapping[str, str]) -> float | None:
    """The tokens/s line LoadGen prints for ``scenario`` (``extra`` of a parsed summary)."""
    key = {
        "single-stream": "TPS w/o loadgen overhead",
        "offline": "Tokens per second",
        "server": "Completed tokens per second",
    }[scenario]
    value = extra.get(key)
    return float(value) if value is not None else None


def _ns(value: str | None) -> float | None:
    return float(value) * _NS if value is not None else None


def _percentiles(extra: Mapping[str, str], pattern: re.Pattern[str]) -> dict[float, float]:
    found = {}
    for key, value in extra.items():
        if match := pattern.match(key):
            found[float(match.group(1))] = float(value) * _NS
    return found


def _goodput(replies: Sequence[Reply], bounds: ServerBounds, wall_s: float) -> float:
    good = sum(
        r.first_token_s <= bounds.ttft_s and r.time_per_output_token_s <= bounds.tpot_s
        for r in replies
        if len(r.tokens) >= 2
    )
    return good / wall_s if wall_s > 0 else 0.0
