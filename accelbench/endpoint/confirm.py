"""A probe drift on a served curve, corroborated or not: the curve's first point measured again.

A served curve has no single series of samples for the noise guard to judge a drift by (its points run
at different concurrencies), so the reference probe's drift would decide alone; on these VMs the probe
alone alarmed on 3-4 of 50 idle synthetic cells (``benchmarks/noise_guard.py``, PROBE1 and PROBE3
columns, 2026-12-04), on a headline that had not moved. So when the guard finds a curve unstable on the
drift alone (no other load, no steal: ``noise.drift_alone``), the first point is measured again at
once (its concurrency and request count, fresh prompts with fresh salts), and the inter-token latencies
of the two runs are compared (``noise.runs_shift``): the curve stays ``unstable`` only when they moved
the way the probe did (``noise.rejudged``). The second run costs one point, spent only then.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from accelbench.curve import CurvePoint
from accelbench.endpoint.client import Target
from accelbench.endpoint.driver import TIMED, Load, run_point
from accelbench.endpoint.figures import itl_s
from accelbench.endpoint.prompts import salted, seeded_texts
from accelbench.endpoint.records import RequestRecord
from accelbench.head import NoiseProbe
from accelbench.meters import noise

CONFIRM = "confirm"
"""The role (and prompt stream) of the first point's second run."""


def confirmed(
    probe: NoiseProbe,
    target: Target,
    tokenizer: Any,
    input_seed: int,
    work: tuple[tuple[int, int], int, int],
    count: Callable[[str], int],
    measured: tuple[Sequence[CurvePoint], Sequence[RequestRecord]],
) -> tuple[NoiseProbe, list[RequestRecord]]:
    """``probe`` judged again after the first point's second run when it drifted alone (see the module
    text), and that run's records (none when it was not needed). ``work``: the prompts' lengths, the
    first point's request count and the tokens each reply may have; ``measured``: the curve and its
    records."""
    curve, records = measured
    if not curve or not noise.drift_alone(probe):
        return probe, []
    lengths, requests, max_tokens = work
    first = curve[0].concurrency
    texts = seeded_texts(input_seed, lengths, requests, CONFIRM, first)
    prompts = salted(tokenizer, input_seed, texts, CONFIRM, first)
    again = run_point(target, prompts, Load(first, max_tokens), count, [CONFIRM] * requests)
    before = [s for r in records if r.role == TIMED and r.concurrency == first and r.ok for s in itl_s(r)]
    after = [s for r in again if r.ok for s in itl_s(r)]
    return noise.rejudged(probe, noise.runs_shift(before, after)), again
