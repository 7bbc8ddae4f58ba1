"""Padded replies of a served LLM (issue 40 item 5): a reply whose text runs on in repeated filler that
the fp32 reference reply to the same prompt does not have.

A server that counts requests and answers the ones it takes for audits honestly can stop generating
early in the others and send a cheap filler (`` the the the ...``) up to ``max_tokens``, with ``usage``
raised to match: the client's own count agrees, the reply is not longer than ``max_tokens``, and its
output tokens/s is several times the honest one. What gives it away is the text itself:

- ``repeated_tail``: the longest end of a text that repeats one piece of at most ``PERIOD_CHARS``
  characters, at least ``RUN_CHARS`` long (three pieces at least). Honest greedy replies loop too, so a
  repeated tail alone proves nothing; it makes the reply one the reference judges (``accuracy``).
- ``padded``: a judged reply whose repeated tail begins where it leaves the reference (from two
  pieces before the point where the two texts part to one after it): the model did not make that
  loop. A loop that began earlier, while the reply still agreed with the reference, is the model's
  (greedy decoding on other kernels may stay in a loop the reference breaks out of); a reply that
  agrees with the reference to its end is honest however it loops. Past the reference's own end (EOS)
  the reply is judged against the reference continued past EOS (``accelbench.endpoint.accuracy.run_on``).
"""

from __future__ import annotations

from dataclasses import dataclass

RUN_CHARS = 24
"""A repeated tail shorter than this is not one (`` the`` x 6; ``...`` ends many honest replies)."""
PERIOD_CHARS = 24
"""The longest repeated piece looked for (a filler of a few tokens)."""
MIN_PIECES = 3


@dataclass(frozen=True, slots=True)
class Tail:
    """The repeated end of a text: where it starts (characters) and the piece's length."""

    start: int
    period: int

    def length(self, text: str) -> int:
        """The tail's length in ``text``'s characters."""
        return len(text) - self.start


def repeated_tail(text: str) -> Tail | None:
    """The longest end of ``text`` made of one repeated piece (``Tail``), None when none reaches
    ``RUN_CHARS`` characters and ``MIN_PIECES`` pieces."""
    best: Tail | None = None
    for period in range(1, PERIOD_CHARS + 1):
        i = len(text) - period - 1
        while i >= 0 and text[i] == text[i + period]:
            i -= 1
        start = i + 1
        run = len(text) - start
        if run >= max(RUN_CHARS, MIN_PIECES * period) and (best is None or start < best.start):
            best = Tail(start, period)
    return best


def parting(reply: str, reference: str) -> int:
    """How many leading characters ``reply`` shares with ``reference`` (both without leading spaces)."""
    same = 0
    for a, b in zip(reply, reference, strict=False):
        if a != b:
            break
        same += 1
    return same


def padded(reply: str, reference: str) -> bool:
    """Whether ``reply`` ends in repeated filler where it leaves ``reference``."""
    reply, reference = reply.lstrip(), reference.lstrip()
    agreed = parting(reply, reference)
    if agreed >= len(reply):
        return False
    tail = repeated_tail(reply)
    return tail is not None and agreed - 2 * tail.period <= tail.start <= agreed + tail.period
