"""The audits of an endpoint cell's requests (issue 31 item 5); each a ``Verdict``.

- ``salts``: every request of the cell had a salt of its own (the prompts the server saw were all new).
- ``first_chunk``: replies whose first text chunk was whitespace or punctuation only (a filler that
  would stop a naive TTFT clock; it does not stop ours). More than ``FILLER_SHARE`` of them fails.
- ``token_count``: the server's ``usage`` against the client's count with the model's tokenizer
  (more than ``USAGE_SHARE`` of replies off by more than an EOS token fails: a server that
  over-reports its tokens), and replies longer than ``max_tokens`` by the client's count (padding).
"""

from __future__ import annotations

from collections.abc import Sequence

from accelbench.audits.verdict import FAIL, PASS, Verdict
from accelbench.endpoint.figures import usage_disagrees
from accelbench.endpoint.records import RequestRecord

FILLER_SHARE = 0.25
USAGE_SHARE = 0.1
PADDING_SLACK_TOKENS = 2
"""Re-tokenizing the joined text may merge or split a token or two at most."""


def salts(records: Sequence[RequestRecord]) -> Verdict:
    """Every request had its own salt."""
    seen = [r.salt for r in records]
    repeated = len(seen) - len(set(seen))
    outcome = FAIL if repeated or any(not s for s in seen) else PASS
    return Verdict(
        "salts", outcome, f"{len(set(seen))} distinct salts over {len(seen)} requests", {"repeated": repeated}
    )


def first_chunk(records: Sequence[RequestRecord]) -> Verdict:
    """Share of ok replies whose first chunk was filler."""
    ok = [r for r in records if r.ok]
    filler = sum(r.filler_first_chunk for r in ok)
    share = filler / len(ok) if ok else 0.0
    outcome = FAIL if share > FILLER_SHARE else PASS
    reason = f"{filler} of {len(ok)} replies began with a whitespace/punctuation-only chunk"
    reason += f" (bar {FILLER_SHARE:.0%})"
    return Verdict("first_chunk", outcome, reason, {"filler": filler, "share": round(share, 4)})


def token_count(records: Sequence[RequestRecord], max_tokens: int) -> Verdict:
    """The server's token counts and the replies' lengths against the client's count."""
    ok = [r for r in records if r.ok]
    off = sum(usage_disagrees(r) for r in ok)
    padded = sum(r.output_tokens > max_tokens + PADDING_SLACK_TOKENS for r in ok)
    share = off / len(ok) if ok else 0.0
    outcome = FAIL if share > USAGE_SHARE or padded else PASS
    reason = (
        f"{off} of {len(ok)} replies' usage off the client's count by more than an EOS "
        f"(bar {USAGE_SHARE:.0%}); {padded} longer than max_tokens {max_tokens}"
    )
    return Verdict("token_count", outcome, reason, {"usage_off": off, "padded": padded})


def verdicts(records: Sequence[RequestRecord], max_tokens: int) -> tuple[Verdict, ...]:
    """Every audit of the cell's requests."""
    return salts(records), first_chunk(records), token_count(records, max_tokens)
