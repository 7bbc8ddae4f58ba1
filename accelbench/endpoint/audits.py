"""The audits of an endpoint cell's requests (issue 31 item 5); each a ``Verdict``.

- ``salts``: every request of the cell had a salt of its own (the prompts the server saw were all new).
- ``first_chunk``: the TTFT clock stops at the first non-empty chunk (as MLPerf's and AIPerf's do), so
  a server could send one early. A judged reply's first chunk is fake when the reply it starts does not
  account for it (``accuracy.fake_first_chunk``: a whitespace/punctuation filler the fp32 reference
  does not begin with, or any chunk without which the reply repeats much more of the reference); one
  such fails. The model may begin with a filler itself (SmolLM2 often echoes the salt's ``[``); without
  a judged filler, more than ``FILLER_SHARE`` of the replies beginning with one fails.
- ``token_count``: the server's total ``usage`` against the client's total count with the model's
  tokenizer (more than ``USAGE_SHARE`` apart fails: a server that over-reports its tokens), and
  replies longer than ``max_tokens`` by the client's count beyond the re-tokenizing slack (padding:
  more than ``USAGE_SHARE`` of the replies fails); a server's ``usage`` never replaces the client's
  count in a figure, and more than ``USAGE_SHARE`` of the replies whose own ``usage`` is above the
  client's count beyond the slack fails too (per reply, not only the totals; a count under the
  client's is the re-tokenizing's, and earns the server nothing).
- ``padding``: a judged reply (drawn at random after the curve: ``accelbench.endpoint.accuracy``) that
  ends in repeated filler the fp32 reference does not have (``accelbench.endpoint.padding``); one fails.
"""

from __future__ import annotations

from collections.abc import Sequence

from accelbench.audits.verdict import FAIL, PASS, Verdict
from accelbench.endpoint.accuracy import Accuracy
from accelbench.endpoint.figures import usage_disagrees
from accelbench.endpoint.records import RequestRecord

FILLER_SHARE = 0.25
USAGE_SHARE = 0.1
PADDING_SHARE = 0.25
PADDING_SLACK_TOKENS = 2
"""Re-tokenizing the joined text can split what the model made as one token (partial UTF-8, odd
bytes): a reply is padded when the client counts more than max_tokens x 1.25 + 2 tokens."""


def salts(records: Sequence[RequestRecord]) -> Verdict:
    """Every request had its own salt."""
    seen = [r.salt for r in records]
    repeated = len(seen) - len(set(seen))
    outcome = FAIL if repeated or any(not s for s in seen) else PASS
    return Verdict(
        "salts", outcome, f"{len(set(seen))} distinct salts over {len(seen)} requests", {"repeated": repeated}
    )


def first_chunk(records: Sequence[RequestRecord], accuracy: Accuracy) -> Verdict:
    """Filler first chunks: fails when a judged one is not how the reference reply begins, or (none
    judged) when more than ``FILLER_SHARE`` of the ok replies have one."""
    ok = [r for r in records if r.ok]
    filler = sum(r.filler_first_chunk for r in ok)
    share = filler / len(ok) if ok else 0.0
    fake = accuracy.fake_fillers > 0 or (not accuracy.fillers and share > FILLER_SHARE)
    outcome = FAIL if fake else PASS
    reason = f"{filler} of {len(ok)} replies began with a whitespace/punctuation-only chunk"
    reason += f"; {accuracy.fake_fillers} of {accuracy.fillers} judged ones not the reference's start"
    evidence = {"filler": filler, "share": round(share, 4), "fake_judged": accuracy.fake_fillers}
    return Verdict("first_chunk", outcome, reason, evidence)


def token_count(records: Sequence[RequestRecord], max_tokens: int) -> Verdict:
    """The server's total ``usage`` against the client's total count, and replies padded past
    ``max_tokens`` (by more than the re-tokenizing slack)."""
    ok = [r for r in records if r.ok]
    counted = [r for r in ok if r.usage_output_tokens is not None]
    client = sum(r.output_tokens for r in counted)
    usage = sum(r.usage_output_tokens or 0 for r in counted)
    off = abs(usage - client) / client if client else 0.0
    longest = max_tokens * (1 + PADDING_SHARE) + PADDING_SLACK_TOKENS
    padded = sum(r.output_tokens > longest for r in ok)
    disagreeing = sum(usage_disagrees(r) for r in ok)
    over = sum(usage_disagrees(r) and (r.usage_output_tokens or 0) > r.output_tokens for r in ok)
    bar = USAGE_SHARE * len(ok)
    outcome = FAIL if off > USAGE_SHARE or padded > bar or over > bar else PASS
    reason = (
        f"server usage {usage} vs client count {client} tokens ({off:.1%} off, bar {USAGE_SHARE:.0%}); "
        f"{over} of {len(ok)} replies' own usage above the client's count; "
        f"{padded} of {len(ok)} replies longer than {longest:g} tokens (max_tokens {max_tokens})"
    )
    return Verdict(
        "token_count",
        outcome,
        reason,
        {"usage_off": round(off, 4), "padded": padded, "disagreeing": disagreeing, "over": over},
    )


def padding(accuracy: Accuracy) -> Verdict:
    """Judged replies ending in repeated filler that the reference does not have: one fails."""
    judged = len(accuracy.shares)
    reason = (
        f"{accuracy.padded} of {judged} replies drawn at random after the curve end in repeated filler "
        f"the fp32 reference does not have ({accuracy.flagged} judged with a repeated tail or filler start)"
    )
    evidence: dict[str, int | float | None] = {"padded": accuracy.padded, "judged": judged}
    evidence |= {"flagged": accuracy.flagged, "below_floor": accuracy.below_floor}
    evidence["min_share"] = round(min(accuracy.shares), 4) if accuracy.shares else None
    return Verdict("padding", FAIL if accuracy.padded else PASS, reason, evidence)


def verdicts(records: Sequence[RequestRecord], max_tokens: int, accuracy: Accuracy) -> tuple[Verdict, ...]:
    """Every audit of the cell's requests (``accuracy``: the judged replies against the reference)."""
    return salts(records), first_chunk(records, accuracy), token_count(records, max_tokens), padding(accuracy)
