"""accelbench.generation.quality: agreement with the reference, TEST06- and TEST09-style reply checks."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import pytest

from accelbench.generation.base import Generator, Reply, stop_index
from accelbench.generation.quality import (
    TIE_MARGIN,
    agreement,
    check_test06,
    check_test09,
    first_divergence,
    fresh_prompt,
    prefix_cache_audit,
    threshold_for,
)

EOS = 2


def reply(*tokens: int, first: int | None = None) -> Reply:
    """A reply with made-up times (the checks here read tokens only)."""
    return Reply(tuple(tokens), 0.01, 0.05, tokens[0] if first is None and tokens else (first or 0))


def test_first_divergence_positions() -> None:
    assert first_divergence([5, 6, 7], [5, 6, 7]) is None
    assert first_divergence([5, 6, 7], [5, 9, 7]) == 1
    assert first_divergence([5, 6, 7], [5, 6]) == 2
    assert first_divergence([5, 6], [5, 6, 7, 8]) == 2
    assert first_divergence([5], [4]) == 0


def test_identical_replies_pass_every_bar() -> None:
    refs = [reply(5, 6, 7), reply(8, EOS)]
    result = agreement(refs, list(refs), "fp32", margins=[[1.0] * 3, [1.0] * 2])
    assert result.identical_share == 1.0
    assert result.first_divergence == (None, None)
    assert result.identical_replies == 2
    assert result.passed


def test_share_counts_positions_over_the_longer_reply() -> None:
    refs = [reply(5, 6, 7, 8), reply(1, 2)]
    outs = [reply(5, 6, 9, 8), reply(1, 2, 3, 4)]  # 3 of 4, then 2 of 4 (longer reply)
    result = agreement(refs, outs, "int4")
    assert result.identical_share == pytest.approx(5 / 8)
    assert result.first_divergence == (2, 2)
    assert result.tie_divergences == -1  # no margins given
    assert result.passed  # int4 bar 0.05


def test_fp32_fails_on_a_divergence_at_a_clear_margin() -> None:
    refs = [reply(*range(10, 30))]
    outs = [reply(*range(10, 29), 99)]  # 19 of 20 identical: share 0.95, at the fp32 bar
    tie = agreement(refs, outs, "fp32", margins=[[1.0] * 19 + [TIE_MARGIN / 2]])
    clear = agreement(refs, outs, "fp32", margins=[[1.0] * 20])
    assert tie.identical_share == pytest.approx(0.95)
    assert tie.passed and tie.tie_divergences == 1
    assert not clear.passed and clear.tie_divergences == 0
    assert agreement(refs, outs, "int8", margins=[[1.0] * 20]).passed  # quantized: share only


def test_unknown_precision_gets_the_fp32_bar() -> None:
    assert threshold_for("fp7") == threshold_for("fp32") == 0.95
    assert threshold_for("int4") < threshold_for("int8") < threshold_for("bf16") < threshold_for("fp32")
    refs = [reply(*range(10, 20))]
    outs = [reply(*range(10, 18), 1, 1)]
    assert not agreement(refs, outs, "fp7").passed


def test_agreement_rejects_unpaired_replies() -> None:
    with pytest.raises(ValueError, match="2 replies for 1"):
        agreement([reply(1, 2)], [reply(1, 2), reply(3, 4)], "fp32")


def test_test06_accepts_eos_or_cap_endings() -> None:
    check = check_test06(
        [reply(5, 6, EOS), reply(5, 6, 7, 8), reply(EOS)], max_new_tokens=4, eos_token_id=EOS
    )
    assert check.passed and check.value == 1.0


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (reply(5, EOS, 7, EOS), "EOS at position 1"),
        (reply(5, 6), "neither at EOS nor at the cap"),
        (reply(5, 6, 7, 8, 9), "beyond the cap"),
        (reply(5, 6, 7, 8, first=9), "first token reported 9 but returned 5"),
        (Reply((), 0.0, 0.0, 0), "empty reply"),
    ],
)
def test_test06_names_each_broken_rule(bad: Reply, message: str) -> None:
    check = check_test06([reply(5, 6, 7, 8), bad], max_new_tokens=4, eos_token_id=EOS)
    assert not check.passed
    assert check.value == 0.5
    assert message in check.detail


def test_test09_bounds_the_mean_length() -> None:
    refs = [reply(*range(10)), reply(*range(10))]
    assert check_test09(refs, [reply(*range(9)), reply(*range(10))]).passed  # 0.95
    short = check_test09(refs, [reply(*range(8)), reply(*range(9))])  # 0.85
    assert not short.passed and short.value == pytest.approx(0.85)
    assert not check_test09(refs, [reply(*range(12)), reply(*range(11))]).passed  # 1.15


def test_tpot_follows_mlperf_definition() -> None:
    r = Reply((1, 2, 3, 4, 5), first_token_s=0.1, latency_s=0.5, first_reported=1)
    assert r.time_per_output_token_s == pytest.approx(0.1)  # (0.5 - 0.1) / 4
    assert Reply((1,), 0.1, 0.1, 1).time_per_output_token_s == 0.0
    assert stop_index([4, 5, EOS, 6], EOS) == 3
    assert stop_index([4, 5], EOS) == 2


class PlantedPrefill(Generator):
    """Prefill sleeps 0.2 ms per prompt token; ``reuse`` skips it for a prompt equal to the last one."""

    precision = "fp32"
    weight_format = "none"
    conversion_s = 0.0

    def __init__(self, reuse: bool) -> None:
        self.reuse = reuse
        self.last: list[int] = []
        self.details = {"reuse": str(reuse)}

    def _run(self, prompt: Sequence[int], max_new_tokens: int, first: Callable[[int], None]) -> list[int]:
        cached = self.reuse and list(prompt) == self.last
        time.sleep(0.0002 if cached else 0.0002 * len(prompt))
        self.last = list(prompt)
        first(prompt[0])
        return [prompt[0], EOS]


def test_prefix_cache_audit_catches_a_reused_prefix() -> None:
    long_prompt = list(range(10, 210))
    honest = prefix_cache_audit(PlantedPrefill(reuse=False), long_prompt, 4)
    cheat = prefix_cache_audit(PlantedPrefill(reuse=True), long_prompt, 4)
    assert honest.passed and honest.value > 0.7, honest.detail
    assert not cheat.passed and cheat.value < 0.1, cheat.detail


class PlantedReplyCache(PlantedPrefill):
    """Remembers every prompt it has answered and skips the prefill of any of them."""

    def __init__(self) -> None:
        super().__init__(reuse=False)
        self.seen: set[tuple[int, ...]] = set()

    def _run(self, prompt: Sequence[int], max_new_tokens: int, first: Callable[[int], None]) -> list[int]:
        key = tuple(prompt)
        time.sleep(0.0002 if key in self.seen else 0.0002 * len(prompt))
        self.seen.add(key)
        first(prompt[0])
        return [prompt[0], EOS]


def test_prefix_cache_audit_catches_a_cache_of_every_prompt_seen_before() -> None:
    long_prompt, other = list(range(10, 210)), list(range(300, 500))
    cache = PlantedReplyCache()
    for _ in range(2):  # the timed run has seen the audit's prompts: the audit uses fresh ones
        cache.generate(long_prompt, 4)
        cache.generate(other, 4)
    check = prefix_cache_audit(cache, long_prompt, 4)
    assert not check.passed and check.value < 0.1, check.detail


class PlantedShapeChange(PlantedPrefill):
    """Honest, but its first prefill after a change of prompt length costs 2.5x (an eager prefill that
    re-plans its kernels for a new shape, as torch-compiled's did on tiny-llama)."""

    def __init__(self) -> None:
        super().__init__(reuse=False)

    def _run(self, prompt: Sequence[int], max_new_tokens: int, first: Callable[[int], None]) -> list[int]:
        changed = len(prompt) != len(self.last)
        time.sleep(0.0002 * len(prompt) * (2.5 if changed else 1.0))
        self.last = list(prompt)
        first(prompt[0])
        return [prompt[0], EOS]


def test_prefix_cache_audit_spares_an_honest_stack_slow_after_a_new_prompt_length() -> None:
    stack = PlantedShapeChange()
    stack.generate(list(range(300, 350)), 4)  # the timed run ended on a shorter prompt
    check = prefix_cache_audit(stack, list(range(10, 210)), 4)
    assert check.passed and check.value > 0.7, check.detail


class PlantedSlowEveryThird(PlantedPrefill):
    """Honest, but every third call from the second on costs 4x (a periodic stall beside it)."""

    def __init__(self) -> None:
        super().__init__(reuse=False)
        self.calls = 0

    def _run(self, prompt: Sequence[int], max_new_tokens: int, first: Callable[[int], None]) -> list[int]:
        time.sleep(0.0002 * len(prompt) * (4.0 if self.calls % 3 == 1 else 1.0))
        self.calls += 1
        first(prompt[0])
        return [prompt[0], EOS]


def test_prefix_cache_audit_compares_calls_in_the_same_place() -> None:
    """The fresh prompt's first call is the slow one of every triple: the repeat is still compared with a
    never-seen prompt in its own place, so the honest stack passes."""
    check = prefix_cache_audit(PlantedSlowEveryThird(), list(range(10, 210)), 4)
    assert check.passed and 0.7 < check.value < 1.4, check.detail


def test_fresh_prompts_differ_from_the_prompt_and_from_each_other() -> None:
    prompt = [1, 5, 9, 9, 12]
    fresh = [fresh_prompt(prompt, n) for n in range(3)]
    assert all(f != prompt and len(f) == len(prompt) and set(f) <= set(prompt) for f in fresh)
    assert len({tuple(f) for f in fresh}) == 3


def test_prefix_cache_audit_measures_a_failure_again_before_it_counts() -> None:
    class StallsFirst(PlantedPrefill):
        """Honest, but its never-seen calls stall in the first 4 rounds (a busy machine)."""

        def __init__(self) -> None:
            super().__init__(reuse=False)
            self.calls = 0

        def _run(self, prompt: Sequence[int], max_new_tokens: int, first: Callable[[int], None]) -> list[int]:
            self.calls += 1
            if self.calls <= 24 and self.calls % 6 == 0:
                time.sleep(0.4)  # 10x the prefill: below the bar however busy the machine
            return super()._run(prompt, max_new_tokens, first)

    check = prefix_cache_audit(StallsFirst(), list(range(10, 210)), 4)
    assert check.passed and "12 rounds" in check.detail, check.detail
