"""The repeat audit of a served LLM: does the server answer content it has seen from a cache that
ignores the salt?

After the curve, ``PAIRS`` pairs go at concurrency 1 with the curve's ``max_tokens`` (a server cannot
tell them by their length cap), interleaved: a *seen* prompt (the text of a request the curve sent,
with a fresh salt) and an *unseen* one (a never-sent text of the same token count by the model's
tokenizer, fresh salt: lengths drawn apart made the unseen prompts of an honest server 3x slower in
CI), in an order drawn per pair from ``secrets``: a server cannot tell the seen one by its place, and
an order effect of the machine (the first of two requests the faster) falls on both alike. An honest
server, prefix cache included, cannot reuse anything past the system prompt (the salt follows it,
inside the first cache page), so both kinds take the same time. A server that keys its cache on the
prompt without the salt answers the seen ones at once. It fails when the seen prompts' median TTFT is
below ``FAST_RATIO`` of the unseen ones' and the seen one of a pair was the faster in at least
``FASTER_SHARE`` of the pairs (two conditions: one slow outlier cannot fail an honest server on a busy
machine).
"""

from __future__ import annotations

import secrets
import statistics
from collections.abc import Callable, Sequence
from typing import Any

from accelbench.audits.verdict import FAIL, INCONCLUSIVE, PASS, Verdict
from accelbench.endpoint.client import Target
from accelbench.endpoint.driver import Load, run_point
from accelbench.endpoint.figures import ttft_s
from accelbench.endpoint.prompts import matched_texts, salted
from accelbench.endpoint.records import RequestRecord

PAIRS = 6
FAST_RATIO = 0.5
FASTER_SHARE = 0.8
SEEN, UNSEEN = "seen", "unseen"


def repeat_records(
    target: Target,
    tokenizer: Any,
    input_seed: int,
    sent_texts: Sequence[str],
    count: Callable[[str], int],
    max_tokens: int,
) -> list[RequestRecord]:
    """The audit's requests: seen and unseen interleaved, at concurrency 1, each with the curve's
    ``max_tokens`` (a server cannot tell them by their length cap)."""
    pairs = min(PAIRS, len(sent_texts))
    seen = list(sent_texts[:pairs])
    unseen = matched_texts(input_seed, seen, count, "repeat-unseen")
    flips = [secrets.randbelow(2) == 1 for _ in range(pairs)]
    ordered = [
        ((b, UNSEEN), (a, SEEN)) if flip else ((a, SEEN), (b, UNSEEN))
        for a, b, flip in zip(seen, unseen, flips, strict=True)
    ]
    texts = [text for pair in ordered for text, _ in pair]
    roles = [role for pair in ordered for _, role in pair]
    prompts = salted(tokenizer, input_seed, texts, "repeat")
    return run_point(target, prompts, Load(1, max_tokens), count, roles)


def outcome(pairs: int, ratio: float, faster_share: float) -> str:
    """The served repeat rule, from its stored evidence: fewer than 3 answered pairs is inconclusive;
    seen prompts under ``FAST_RATIO`` of the unseen TTFT in ``FASTER_SHARE`` of the pairs fail. The run
    and ``verify`` both judge with it."""
    if pairs < 3:
        return INCONCLUSIVE
    return FAIL if ratio < FAST_RATIO and faster_share >= FASTER_SHARE else PASS


def repeat_verdict(records: Sequence[RequestRecord]) -> Verdict:
    """Seen against unseen TTFT (see the module text)."""
    pairs = [_seen_first(records[i], records[i + 1]) for i in range(0, len(records) - 1, 2)]
    timed = [(ttft_s(a), ttft_s(b)) for a, b in pairs if a.ok and b.ok]
    both = [(a, b) for a, b in timed if a is not None and b is not None]
    if len(both) < 3:
        return Verdict("repeat", INCONCLUSIVE, f"only {len(both)} seen/unseen pairs answered")
    seen = statistics.median(a for a, _ in both)
    unseen = statistics.median(b for _, b in both)
    ratio = seen / unseen if unseen > 0 else 1.0
    faster = sum(a < b for a, b in both) / len(both)
    identical = sum(records[i].text == records[i + 1].text for i in range(0, len(records) - 1, 2))
    evidence = {"ratio": round(ratio, 4), "faster_share": round(faster, 4), "pairs": len(both)}
    evidence["bar"] = FAST_RATIO
    reason = (
        f"seen prompts' median TTFT {seen * 1e3:.1f} ms vs unseen {unseen * 1e3:.1f} ms (x{ratio:.2f}, "
        f"bar x{FAST_RATIO}); seen faster in {faster:.0%} of {len(both)} pairs"
    )
    judged = outcome(len(both), ratio, faster)
    return Verdict("repeat", judged, reason, {**evidence, "identical_pairs": identical})


def _seen_first(a: RequestRecord, b: RequestRecord) -> tuple[RequestRecord, RequestRecord]:
    """A pair of records, the seen one first (they went in either order)."""
    return (b, a) if a.role == UNSEEN else (a, b)
