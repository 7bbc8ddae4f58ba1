"""Tests of the audits on fake sessions timed by a fake clock: each cheat is flagged, honesty is not."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from accelbench import audits

Inputs = tuple[np.ndarray, ...]


class FakeClock:
    """A clock that only moves when a fake session says it computed."""

    def __init__(self) -> None:
        self.now_s = 0.0

    def __call__(self) -> float:
        return self.now_s


def fresh_samples(seed: int = 1) -> list[Inputs]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((1, 8)).astype(np.float32),) for _ in range(audits.samples_needed())]


WEIGHTS = np.random.default_rng(0).standard_normal((8, 10))


def reference(sample: Inputs) -> np.ndarray:
    return (sample[0].astype(np.float64) @ WEIGHTS).astype(np.float32)


def honest(clock: FakeClock, jitter: Callable[[], float] = lambda: 0.0) -> Callable[[Inputs], np.ndarray]:
    def infer(sample: Inputs) -> np.ndarray:
        clock.now_s += 1e-3 + jitter()
        return reference(sample)

    return infer


def caching(clock: FakeClock) -> Callable[[Inputs], np.ndarray]:
    cache: dict[bytes, np.ndarray] = {}
    compute = honest(clock)

    def infer(sample: Inputs) -> np.ndarray:
        key = sample[0].tobytes()
        clock.now_s += 1e-5
        if key not in cache:
            cache[key] = compute(sample)
        return cache[key]

    return infer


def audit(infer: Callable[[Inputs], np.ndarray], clock: FakeClock, precision: str = "fp32") -> dict:
    return audits.audit_section(infer, reference, fresh_samples(), "cosine", precision, 7, clock=clock)


def flagged(section: dict) -> list[str]:
    return [name for name in ("caching", "alternate_seed", "precision") if section[name]["flagged"]]


def test_an_honest_session_is_not_flagged() -> None:
    clock = FakeClock()
    section = audit(honest(clock), clock)
    assert flagged(section) == []
    assert section["caching"]["speedup"] == pytest.approx(1.0)
    assert section["caching"]["unique_calls"] == audits.MAX_TRIPLES
    assert (
        section["precision"]["max_norm_abs_err"] == 0.0 and section["precision"]["consistent_with"] == "fp32"
    )
    assert section["alternate_seed"]["seed"] == 7 and section["alternate_seed"]["samples_checked"] == 12


def test_noise_that_slows_every_unique_call_is_not_caching() -> None:
    clock = FakeClock()
    # per triple: unique call, untimed repeat, timed repeat; every unique call is preempted (+50 ms),
    # the timed repeats too (+60 ms) but for one lucky call
    delays = [0.05, 0.0, 0.0] + [0.05, 0.0, 0.06] * (audits.MAX_TRIPLES - 1)
    section = audit(honest(clock, iter(delays).__next__), clock)
    assert section["caching"]["speedup"] > audits.CACHING_SPEEDUP_LIMIT
    assert not section["caching"]["flagged"]


def test_an_output_cache_is_flagged() -> None:
    clock = FakeClock()
    section = audit(caching(clock), clock)
    assert flagged(section) == ["caching"]
    assert section["caching"]["speedup"] > 50 and section["caching"]["repeats_faster_share"] == 1.0
    assert "may cache outputs" in audits.audit_warnings(section)[0]


def test_skipping_a_repeated_input_is_flagged() -> None:
    clock = FakeClock()
    last: dict[str, object] = {}
    compute = honest(clock)

    def infer(sample: Inputs) -> np.ndarray:
        if last.get("key") != sample[0].tobytes():
            last["key"], last["out"] = sample[0].tobytes(), compute(sample)
        return last["out"]  # type: ignore[return-value]

    assert flagged(audit(infer, clock)) == ["caching"]


def test_memorised_outputs_fail_the_alternate_seed() -> None:
    clock = FakeClock()
    garbage = np.random.default_rng(3)

    def infer(sample: Inputs) -> np.ndarray:  # knows the benchmark's inputs only
        clock.now_s += 1e-3
        return garbage.standard_normal((1, 10)).astype(np.float32)

    section = audit(infer, clock)
    assert "alternate_seed" in flagged(section)
    assert "alternate seed" in " ".join(audits.audit_warnings(section))


def bf16(array: np.ndarray) -> np.ndarray:
    """Round float32 values to bfloat16 precision (truncate to 8 mantissa bits, round to nearest)."""
    bits = np.asarray(array, np.float32).view(np.uint32)
    return ((bits + 0x8000) & 0xFFFF0000).view(np.float32)


def test_bf16_arithmetic_under_an_fp32_claim_is_flagged_but_not_under_a_bf16_claim() -> None:
    clock = FakeClock()

    def infer(sample: Inputs) -> np.ndarray:
        clock.now_s += 1e-3
        return bf16(bf16(sample[0]).astype(np.float64) @ bf16(WEIGHTS.astype(np.float32)))

    section = audit(infer, clock)
    assert flagged(section) == ["precision"]
    assert section["precision"]["consistent_with"] == "fp16 or bf16"
    assert audit(infer, clock, precision="bf16")["precision"] == {
        **section["precision"],
        "claimed": "bf16",
        "checked": False,
        "budget": None,
        "flagged": False,
    }


def test_the_time_budget_bounds_the_calls() -> None:
    clock = FakeClock()

    def slow(sample: Inputs) -> np.ndarray:
        clock.now_s += 1.0
        return reference(sample)

    section = audit(slow, clock)
    assert section["caching"]["unique_calls"] == audits.MIN_TRIPLES
    assert section["elapsed_s"] == pytest.approx(3.0 * audits.MIN_TRIPLES)
