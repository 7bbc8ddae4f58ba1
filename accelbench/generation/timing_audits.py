"""The timing audits of a generative cell's scored run: the in-run repeat audit and the first-token audit.

* **Repeat** (``repeat_audit``, TEST04 inside the run): every repeat the feed slipped in
  (``accelbench.generation.feed``: a prompt sent again 1-12 calls later; each with a never-seen control of
  its length beside it) is compared with the never-seen prompts of its length in the same run (its control
  and every fresh prompt of that length: their median TTFT) and with the median time per output token (TPOT)
  of the never-seen replies of about its reply length (``_tpot_ratio``; fixed costs per reply make a short
  reply's TPOT longer: against the median of all replies honest torch-eager read a median TPOT ratio of
  0.47). A reply cache answers the repeat at once, a KV prefix cache skips its prefill: both make the
  repeat's TTFT or TPOT far shorter. The audit fails when the median ratio over the repeats is below
  ``REPEAT_RATIO`` for TTFT or ``TPOT_RATIO`` for TPOT, or when at least ``REPEAT_HITS`` repeats (and a
  ``REPEAT_HIT_SHARE`` of them) are below ``HIT_RATIO`` (a cache that serves only some repeats). A
  repeat the harness read late (``Reply.read_late``: the first-token frame read after the whole reply
  had come from the SUT process) counts as a hit by its TTFT only: on the loaded 2-core machine honest
  openvino-genai-gguf (TPOT 0.4 ms on tiny-llama) read 4 TPOT ratios of 0.006-0.04 with TTFT ratios of
  1.6-2.9 that way, and was disqualified in both scenarios before this rule. Fewer than
  ``MIN_PAIRS`` complete pairs: inconclusive. The reference is a median over many calls, not the control
  alone: on a busy machine (load 11 on 2 cores) one stalled call made honest repeat/control ratios of
  0.04-0.25 on tiny-llama, where a call takes milliseconds (with the control alone as reference, 2 of 10
  honest cells failed). Honest single repeats still read as low as 0.12-0.18 against the medians at load
  8-11 (ort-genai on tiny-llama: 3 of 8 under 0.25 once); the caches planted read 0.001-0.005 (reply cache,
  early first token) and 0.07-0.64, median 0.26 (KV prefix reuse on smollm2, caught by the median).
* **First token** (``first_token_audit``): a first token needs a forward pass over the whole prompt,
  which costs at least about one decode step (each reads all the weights), so an honest reply's TTFT is
  not far below its own TPOT (torch-eager on tiny-llama, 8-48-token prompts: TTFT / TPOT 0.55 at the
  lowest of 60 replies, 1.10 median; in a LoadGen run on the busy 2-core machine 0.18 at the lowest of
  63, 0.64 median). A stack that reports a remembered or guessed first token before
  doing the prefill has TTFT near zero and the prefill in its TPOT. The audit fails when at least
  ``EARLY_REPLIES`` replies (and an ``EARLY_SHARE`` of them) have TTFT below ``FIRST_TOKEN_FLOOR`` x their
  own TPOT. Fewer than ``MIN_REPLIES`` replies of 2+ tokens: inconclusive. The TTFT here is the stack's
  share of it: the wire's round trip to its SUT process (``Reply.wire_s``) is taken off (a token reported
  before any work reached the harness 0.16 x TPOT after the query on tiny-llama, whose TPOT is about a
  millisecond). What is taken off is the fastest round trip of the run, not each reply's own: the
  harness reads a reply's round trip when it wakes, and on a loaded machine it woke after the first token
  had come too (an honest reader's own round trips then took its whole TTFT: 4 of 61 replies under the
  floor). The SUT process can only make the fastest round trip longer, which makes its first tokens look
  earlier. The repeat audit keeps the whole TTFT: there a longer-looking round trip on
  never-seen prompts would help a cache.

Both compare a stack with itself in the same run, so a slow or fast stack meets the same bars.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from accelbench.audits.verdict import FAIL, INCONCLUSIVE, PASS, Verdict
from accelbench.generation.base import Reply
from accelbench.generation.feed import CONTROL, REPEAT, Sent

REPEAT_RATIO = 0.5
TPOT_RATIO = 0.25
"""The TPOT median's bar: honest medians read down to 0.45 (ort-genai-int4 offline, tiny-llama, whose
replies are short and their fixed costs large); a cached tail reads 0.00, a cached reply used as a
speculative draft (one forward verifies it) about 1 / reply length."""
HIT_RATIO = 0.1
REPEAT_HITS = 3
REPEAT_HIT_SHARE = 0.25
MIN_PAIRS = 5
TPOT_NEIGHBOURS = 5
LENGTH_GAP = 2
FIRST_TOKEN_FLOOR = 0.2
"""0.1 until 2026-12-06, when ``make test`` saw ``planted-llm-early-token`` (a remembered first token
reported at once) read 0.08-0.12 at its five lowest on the slow 2-vCPU VM, 2 replies under 0.1: a pass.
Honest replies (tiny-llama, torch-eager, ort-genai, torch-compiled, 18 cells of 6 runs the same day,
about 1,500 replies): lowest 0.46, none under 0.2; the bar is 3 replies and 5% under it."""
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


def _never_seen(replies: Sequence[Reply], sent: Sequence[Sent]) -> tuple[dict[int, float], list[Reply]]:
    """Median TTFT of the never-seen prompts of each length (by the workload prompt they were made from),
    and the never-seen replies of 2+ tokens."""
    ttft: dict[int, list[float]] = {}
    decoded: list[Reply] = []
    for reply, what in zip(replies, sent, strict=True):
        if what.role != REPEAT:
            ttft.setdefault(what.base, []).append(reply.first_token_s)
            decoded += [reply] if len(reply.tokens) >= 2 else []
    return {base: statistics.median(times) for base, times in ttft.items()}, decoded


def _tpot_ratio(reply: Reply, decoded: Sequence[Reply]) -> float:
    """``reply``'s TPOT over the median TPOT of the never-seen replies within ``LENGTH_GAP`` tokens of its
    length, or the ``TPOT_NEIGHBOURS`` nearest when fewer are that near (a median of 2 calls was stalled
    once: ratio 0.12); a reply's fixed costs spread over its tokens, so a short reply has a longer TPOT."""
    if len(reply.tokens) < 2 or not decoded:
        return 1.0
    gap = [abs(len(other.tokens) - len(reply.tokens)) for other in decoded]
    reach = (
        LENGTH_GAP
        if sum(g <= LENGTH_GAP for g in gap) >= 2
        else sorted(gap)[min(TPOT_NEIGHBOURS, len(gap)) - 1]
    )
    nearest = [other.time_per_output_token_s for other, g in zip(decoded, gap, strict=True) if g <= reach]
    return _ratio(reply.time_per_output_token_s, statistics.median(nearest))


def repeat_audit(replies: Sequence[Reply], sent: Sequence[Sent]) -> Verdict:
    """Repeated prompts against never-seen prompts of the same length (see the module text)."""
    pairs = pairs_of(replies, sent)
    ttft_never, decoded = _never_seen(replies, sent)
    ttft = [_ratio(r.first_token_s, ttft_never[s.base]) for r, _, s in pairs]
    tpot = [_tpot_ratio(r, decoded) for r, _, _ in pairs]
    distances = sorted(s.distance for _, _, s in pairs)
    evidence: dict[str, Any] = {
        "pairs": len(pairs),
        "distances": distances,
        "ttft_ratios": [round(x, 4) for x in ttft],
        "tpot_ratios": [round(x, 4) for x in tpot],
        "ratio_bar": REPEAT_RATIO,
        "tpot_bar": TPOT_RATIO,
        "hit_ratio": HIT_RATIO,
    }
    if len(pairs) < MIN_PAIRS:
        why = f"{len(pairs)} repeated prompts with their never-seen controls, fewer than {MIN_PAIRS}"
        return Verdict("repeat", INCONCLUSIVE, why, evidence)
    ttft_median, tpot_median = statistics.median(ttft), statistics.median(tpot)
    # a reply read late has its decode in its TTFT: its TPOT is no evidence of a hit (its TTFT still is)
    late = [r.read_late for r, _, _ in pairs]
    hits = sum(min(a, 1.0 if x else b) < HIT_RATIO for a, b, x in zip(ttft, tpot, late, strict=True))
    many_hits = hits >= REPEAT_HITS and hits >= REPEAT_HIT_SHARE * len(pairs)
    evidence |= {"ttft_median": round(ttft_median, 4), "tpot_median": round(tpot_median, 4), "hits": hits}
    failed = ttft_median < REPEAT_RATIO or tpot_median < TPOT_RATIO or many_hits
    reason = (
        f"{len(pairs)} prompts seen {distances[0]}-{distances[-1]} calls before vs never-seen ones of the "
        f"same length: median TTFT ratio {ttft_median:.2f} (bar {REPEAT_RATIO}), TPOT ratio "
        f"{tpot_median:.2f} (bar {TPOT_RATIO}); {hits} repeats below {HIT_RATIO} (bar {REPEAT_HITS} and "
        f"{REPEAT_HIT_SHARE:.0%})"
    )
    return Verdict("repeat", FAIL if failed else PASS, reason, evidence)


def first_token_audit(replies: Sequence[Reply]) -> Verdict:
    """TTFT against each reply's own TPOT (see the module text)."""
    timed = [r for r in replies if _timed(r)]
    wire_s = min((r.wire_s for r in timed), default=0.0)
    ratios = [(r.first_token_s - wire_s) / r.time_per_output_token_s for r in timed]
    early = sum(x < FIRST_TOKEN_FLOOR for x in ratios)
    evidence = {
        "replies": len(ratios),
        "wire_s": wire_s,
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
