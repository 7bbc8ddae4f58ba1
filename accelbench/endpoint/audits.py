"""The audits of an endpoint cell's requests (issue 31 item 5); each a ``Verdict``.

- ``salts``: every request of the cell had a salt of its own (the prompts the server saw were all new).
- ``first_chunk``: replies whose first text chunk was whitespace or punctuation only (a filler that
  would stop a naive TTFT clock; it does not stop ours). The model may begin so itself (SmolLM2 often
  echoes the salt's ``[``): a judged reply's first chunk is a filler when the fp32 reference reply
  does not begin with it; one such fails. Without a judged one, more than ``FILLER_SHARE`` fails.
- ``token_count``: the server's total ``usage`` against the client's total count with the model's
  tokenizer (more than ``USAGE_SHARE`` apart fails: a server that over-reports its tokens), and
  replies longer than ``max_tokens`` by the client's count beyond the re-tokenizing slack (padding:
  more than ``USAGE_SHARE`` of the replies fails).
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
    outcome = FAIL if off > USAGE_SHARE or padded > USAGE_SHARE * len(ok) else PASS
    reason = (
        f"server usage {usage} vs client count {client} tokens ({off:.1%} off, bar {USAGE_SHARE:.0%}); "
        f"{padded} of {len(ok)} replies longer than {longest:g} tokens (max_tokens {max_tokens})"
    )
    disagreeing = sum(usage_disagrees(r) for r in ok)
    return Verdict(
        "token_count",
        outcome,
        reason,
        {"usage_off": round(off, 4), "padded": padded, "disagreeing": disagreeing},
    )


def verdicts(records: Sequence[RequestRecord], max_tokens: int, accuracy: Accuracy) -> tuple[Verdict, ...]:
    """Every audit of the cell's requests (``accuracy``: the judged replies against the reference)."""
    return salts(records), first_chunk(records, accuracy), token_count(records, max_tokens)
