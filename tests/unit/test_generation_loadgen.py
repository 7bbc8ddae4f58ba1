"""accelbench.generation.loadgen_tokens under the real LoadGen, with a planted engine of known timing.

The planted generator sleeps a fixed prefill time, then a fixed time per token: LoadGen's TTFT and TPOT
must come back as planted (sleep overshoot and thread wake-up only add), and the MLPerf identity
TPOT x (tokens - 1) + TTFT = latency must hold on LoadGen's own means, as every reply has the same length.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from accelbench.generation.base import Generator, Reply
from accelbench.generation.loadgen_tokens import (
    MIN_TOKEN_QUERIES,
    ServerBounds,
    TokenRun,
    measure_tokens,
    scaled_bounds,
    timed_prompts,
)

PREFILL_S = 0.02
PER_TOKEN_S = 0.005
TOKENS = 8


class PlantedGenerator(Generator):
    """Sleeps ``PREFILL_S`` then ``PER_TOKEN_S`` per further token; replies are the prompt's first id."""

    precision = "fp32"
    weight_format = "none"
    conversion_s = 0.0

    def __init__(self, tokens: int = TOKENS, fail_at: int | None = None) -> None:
        self.details = {"engine": "planted sleeps"}
        self.tokens = tokens
        self.fail_at = fail_at
        self.calls = 0

    def _run(self, prompt: Sequence[int], max_new_tokens: int, first: Callable[[int], None]) -> list[int]:
        self.calls += 1
        if self.calls == self.fail_at:
            raise RuntimeError("planted failure")
        time.sleep(PREFILL_S)
        first(prompt[0])
        out = [prompt[0]]
        while len(out) < min(self.tokens, max_new_tokens):
            time.sleep(PER_TOKEN_S)
            out.append(prompt[0] + len(out))
        return out


PROMPTS = [[10 + i, 3, 4] for i in range(16)]


def test_single_stream_reads_back_planted_token_latencies(tmp_path: Path) -> None:
    run = TokenRun("single-stream", min_duration_s=0.2, expected_latency_s=0.06)
    figures = measure_tokens(PlantedGenerator(), PROMPTS, 16, run, tmp_path)
    assert figures.valid, figures.invalid_reasons
    assert figures.queries >= MIN_TOKEN_QUERIES
    assert figures.ttft_mean_s is not None and figures.tpot_mean_s is not None
    assert PREFILL_S <= figures.ttft_mean_s < PREFILL_S * 1.5
    assert PER_TOKEN_S <= figures.tpot_mean_s < PER_TOKEN_S * 1.3
    assert figures.ttft_mean_s < figures.latency_mean_s
    identity = figures.tpot_mean_s * (TOKENS - 1) + figures.ttft_mean_s
    assert identity == pytest.approx(figures.latency_mean_s, rel=0.01)
    assert set(figures.ttft_percentiles_s) >= {50.0, 90.0, 99.0}
    assert figures.ttft_percentiles_s[50.0] <= figures.ttft_percentiles_s[99.0]
    assert figures.tokens_per_s is not None
    assert figures.tokens_per_s == pytest.approx(TOKENS / figures.latency_mean_s, rel=0.1)
    assert all(r.first_reported == r.tokens[0] for r in figures.replies)


def test_offline_reports_tokens_per_second_only(tmp_path: Path) -> None:
    run = TokenRun("offline", min_duration_s=0.1, min_queries=20, expected_latency_s=0.06)
    figures = measure_tokens(PlantedGenerator(), PROMPTS, 16, run, tmp_path)
    assert figures.scenario == "offline"
    assert figures.queries >= 20
    assert figures.ttft_mean_s is None and figures.tpot_mean_s is None
    per_reply_s = PREFILL_S + PER_TOKEN_S * (TOKENS - 1)
    assert figures.tokens_per_s is not None
    assert TOKENS / per_reply_s * 0.6 < figures.tokens_per_s <= TOKENS / per_reply_s * 1.01


def test_server_applies_bounds_and_counts_goodput(tmp_path: Path) -> None:
    loose = ServerBounds(ttft_s=1.0, tpot_s=0.05, source="test")
    run = TokenRun("server", min_duration_s=0.5, target_qps=8.0, bounds=loose)
    figures = measure_tokens(PlantedGenerator(), PROMPTS, 16, run, tmp_path / "loose")
    assert figures.bounds == loose
    assert figures.ttft_percentiles_s[99.0] < loose.ttft_s
    assert figures.goodput_qps is not None and figures.goodput_qps > 0
    tight = ServerBounds(ttft_s=0.001, tpot_s=0.001, source="test")
    strict = measure_tokens(
        PlantedGenerator(),
        PROMPTS,
        16,
        TokenRun("server", 0.5, min_queries=16, target_qps=8.0, bounds=tight),  # INVALID at any length
        tmp_path / "tight",
    )
    assert not strict.valid
    assert strict.goodput_qps == 0.0
    assert any("TTFT" in r or "TPOT" in r or "constraint" in r.lower() for r in strict.invalid_reasons)


def test_one_token_replies_make_the_run_invalid(tmp_path: Path) -> None:
    run = TokenRun("single-stream", min_duration_s=0.1, expected_latency_s=0.02)
    figures = measure_tokens(PlantedGenerator(tokens=1), PROMPTS, 16, run, tmp_path)
    assert not figures.valid
    assert figures.short_replies == figures.queries
    assert any("under 2 tokens" in r for r in figures.invalid_reasons)


def test_a_few_one_token_replies_leave_the_run_valid(tmp_path: Path) -> None:
    class SometimesShort(PlantedGenerator):
        def _run(self, prompt: Sequence[int], max_new_tokens: int, first: Callable[[int], None]) -> list[int]:
            tokens = super()._run(prompt, max_new_tokens, first)  # counts the call
            return tokens[:1] if self.calls % 20 == 0 else tokens

    run = TokenRun("single-stream", min_duration_s=0.1, expected_latency_s=0.02)
    figures = measure_tokens(SometimesShort(), PROMPTS, 16, run, tmp_path)
    assert figures.valid and 1 <= figures.short_replies <= 0.1 * figures.queries


def test_a_failing_generator_raises_after_loadgen_returns(tmp_path: Path) -> None:
    run = TokenRun("single-stream", min_duration_s=0.1, expected_latency_s=0.06)
    with pytest.raises(RuntimeError, match="planted failure"):
        measure_tokens(PlantedGenerator(fail_at=3), PROMPTS, 16, run, tmp_path)


def test_unknown_scenario_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="multi-stream"):
        measure_tokens(PlantedGenerator(), PROMPTS, 16, TokenRun("multi-stream"), tmp_path)


def test_bounds_scale_from_llama31_8b() -> None:
    smollm2 = scaled_bounds(134_515_008)
    assert smollm2.ttft_s == pytest.approx(2.0 * 134.515008 / 8030, rel=1e-6)  # 33.5 ms
    assert smollm2.tpot_s == pytest.approx(0.1 * 134.515008 / 8030, rel=1e-6)  # 1.68 ms
    floored = scaled_bounds(3_219_776, floor_ttft_s=0.05, floor_tpot_s=0.005)
    assert (floored.ttft_s, floored.tpot_s) == (0.05, 0.005)
    assert "floors 50/5 ms" in floored.source


def test_timed_prompts_leave_out_replies_without_a_tpot() -> None:
    replies = [Reply((5, 6), 0.1, 0.2, 5), Reply((2,), 0.1, 0.1, 2), Reply((7, 8, 2), 0.1, 0.3, 7)]
    assert timed_prompts(replies) == (0, 2)
