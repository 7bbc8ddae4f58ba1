"""The timing audits of a generative cell's scored run: the in-run repeat audit and the first-token audit.

* **Repeat** (``repeat_audit``, TEST04 inside the run): every repeat the feed slipped in
  (``accelbench.generation.feed``: a prompt sent again 1-12 calls later) is paired with its control (a
  never-seen prompt of the same length, sent one or two calls before or after it). A reply cache answers
  the repeat at once, a KV prefix cache skips its prefill: both make the repeat's time to first token
  (TTFT) or time per output token (TPOT) far shorter than its control's. The audit fails when the median
  ratio repeat / control of either is below ``REPEAT_RATIO``, or when at least ``REPEAT_HITS`` pairs (and
  a ``REPEAT_HIT_SHARE`` of them) are below ``HIT_RATIO`` (a cache that serves only some repeats).
  Fewer than ``MIN_PAIRS`` complete pairs: inconclusive.
* **First token** (``first_token_audit``): a first token needs a forward pass over the whole prompt,
  which costs at least about one decode step (each reads all the weights), so an honest reply's TTFT is
  not far below its own TPOT (torch-eager on tiny-llama, 8-48-token prompts: TTFT / TPOT 0.55 at the
  lowest of 60 replies, 1.10 median; in a LoadGen run on the busy 2-core machine 0.18 at the lowest of
  63, 0.64 median). A stack that reports a remembered or guessed first token before
  doing the prefill has TTFT near zero and the prefill in its TPOT. The audit fails when at least
  ``EARLY_REPLIES`` replies (and an ``EARLY_SHARE`` of them) have TTFT below ``FIRST_TOKEN_FLOOR`` x their
  own TPOT. Fewer than ``MIN_REPLIES`` replies of 2+ tokens: inconclusive.

Both compare a stack with itself in the same run, so a slow or fast stack, a busy machine or a stack
slower after a change of prompt length meets the same bars (the pairs are adjacent and of one length).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from accelbench.audits.verdict import FAIL, INCONCLUSIVE, PASS, Verdict
from accelbench.generation.base import Reply
from accelbench.generation.feed import CONTROL, REPEAT, Sent

REPEAT_RATIO = 0.5
HIT_RATIO = 0.25
REPEAT_HITS = 3
REPEAT_HIT_SHARE = 0.25
MIN_PAIRS = 5
FIRST_TOKEN_FLOOR = 0.1
EARLY_REPLIES = 3
EARLY_SHARE = 0.05
MIN_REPLIES = 20


def pairs_of(replies: Sequence[Reply], sent: Sequence[Sent]) -> list[tuple[Reply, Reply, Sent]]:
    """(repeat reply, control reply, repeat's ``Sent``) of every pair whose two calls both ran."""
    repeats: dict[int, tuple[Reply, Sent]] = {}
    controls: dict[int, Reply] = {}
    for reply, what in zip(replies, sent, strict=True):
        if what.role == REPEAT:
            repeats[what.pair] = (reply, what)
        elif what.role == CONTROL:
            controls[what.pair] = reply
    return [(repeats[p][0], controls[p], repeats[p][1]) for p in sorted(repeats) if p in controls]


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else 1.0


def repeat_audit(replies: Sequence[Reply], sent: Sequence[Sent]) -> Verdict:
    """Repeated prompts against their never-seen controls (see the module text)."""
    pairs = pairs_of(replies, sent)
    ttft = [_ratio(r.first_token_s, c.first_token_s) for r, c, _ in pairs]
    tpot = [
        _ratio(r.time_per_output_token_s, c.time_per_output_token_s)
        for r, c, _ in pairs
        if len(r.tokens) >= 2 and len(c.tokens) >= 2
    ]
    distances = sorted(s.distance for _, _, s in pairs)
    evidence = {
        "pairs": len(pairs),
        "distances": distances,
        "ttft_ratios": [round(x, 4) for x in ttft],
        "tpot_ratios": [round(x, 4) for x in tpot],
        "ratio_bar": REPEAT_RATIO,
        "hit_ratio": HIT_RATIO,
    }
    if len(pairs) < MIN_PAIRS:
        why = f"{len(pairs)} repeated/never-seen prompt pairs, fewer than {MIN_PAIRS}"
        return Verdict("repeat", INCONCLUSIVE, why, evidence)
    ttft_median = statistics.median(ttft)
    tpot_median = statistics.median(tpot) if tpot else 1.0
    hits = sum(min(a, b) < HIT_RATIO for a, b in zip(ttft, _padded(tpot, pairs), strict=True))
    many_hits = hits >= REPEAT_HITS and hits >= REPEAT_HIT_SHARE * len(pairs)
    evidence |= {"ttft_median": round(ttft_median, 4), "tpot_median": round(tpot_median, 4), "hits": hits}
    failed = ttft_median < REPEAT_RATIO or tpot_median < REPEAT_RATIO or many_hits
    reason = (
        f"prompts seen {distances[0]}-{distances[-1]} calls before vs never-seen ones of the same length, "
        f"{len(pairs)} pairs: median TTFT ratio {ttft_median:.2f}, TPOT ratio {tpot_median:.2f} (bar "
        f"{REPEAT_RATIO}); {hits} pairs below {HIT_RATIO} (bar {REPEAT_HITS} and "
        f"{REPEAT_HIT_SHARE:.0%})"
    )
    return Verdict("repeat", FAIL if failed else PASS, reason, evidence)


def _padded(tpot: Sequence[float], pairs: Sequence[tuple[Reply, Reply, Sent]]) -> list[float]:
    """``tpot`` aligned with ``pairs`` (1.0 where a reply had one token: no TPOT)."""
    values = iter(tpot)
    return [next(values) if len(r.tokens) >= 2 and len(c.tokens) >= 2 else 1.0 for r, c, _ in pairs]


def first_token_audit(replies: Sequence[Reply]) -> Verdict:
    """TTFT against each reply's own TPOT (see the module text)."""
    ratios = [r.first_token_s / r.time_per_output_token_s for r in replies if _timed(r)]
    early = sum(x < FIRST_TOKEN_FLOOR for x in ratios)
    evidence = {
        "replies": len(ratios),
        "early_replies": early,
        "floor": FIRST_TOKEN_FLOOR,
        "lowest_ratios": [round(x, 4) for x in sorted(ratios)[:5]],
        "median_ratio": round(statistics.median(ratios), 4) if ratios else None,
    }
    if len(ratios) < MIN_REPLIES:
        why = f"{len(ratios)} replies of 2+ tokens, fewer than {MIN_REPLIES}"
        return Verdict("first_token", INCONCLUSIVE, why, evidence)
    failed = early >= EARLY_REPLIES and early >= EARLY_SHARE * len(ratios)
    lowest = min(ratios)
    reason = (
        f"{early}/{len(ratios)} replies reported their first token before {FIRST_TOKEN_FLOOR} x their own "
        f"time per output token (bar {EARLY_REPLIES} and {EARLY_SHARE:.0%}); lowest TTFT/TPOT {lowest:.3f}, "
        f"median {statistics.median(ratios):.2f}"
    )
    return Verdict("first_token", FAIL if failed else PASS, reason, evidence)


def _timed(reply: Reply) -> bool:
    return len(reply.tokens) >= 2 and reply.time_per_output_token_s > 0
