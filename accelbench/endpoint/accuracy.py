"""The accuracy check of a served LLM: its replies at the lowest, the highest and two middle points of
the curve (MLPerf Endpoints' four; all of a curve of three points or fewer) against torch-eager fp32's
greedy replies to the same salted prompts (``accelbench.generation.reference``).

``JUDGED`` ok replies of each judged point are judged (``judged_points``). A reply agrees by the share of the
reference's text (EOS and special tokens dropped) that it repeats from its start: text, not ids, so
the client's re-tokenizing cannot count against it, and a server that runs on past EOS (``transformers
serve`` with ``eos_token_id: -1``) is judged on the reference's length. The check passes when the mean
share reaches ``MIN_AGREEMENT`` (greedy decoding on other kernels may leave the reference at a near
tie; a server of another model, or of garbage, shares little).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from accelbench.curve import EndpointAccuracy
from accelbench.endpoint.client import Prompt
from accelbench.endpoint.records import RequestRecord
from accelbench.generation.base import GenerationContext
from accelbench.generation.models import LlmModel
from accelbench.generation.reference import sent_reference

JUDGED = 4
MIN_AGREEMENT = 0.6
REFERENCE = "torch-eager fp32, greedy"


@dataclass(frozen=True, slots=True)
class Accuracy:
    """The judged replies' agreement with the reference."""

    mean_share: float
    shares: tuple[float, ...]
    concurrencies: tuple[int, ...]
    passed: bool
    fillers: int = 0
    """Judged replies whose first chunk was whitespace/punctuation only."""
    fake_fillers: int = 0
    """... of which the reference reply does not begin with that chunk (a filler, not the model's)."""

    def record(self) -> EndpointAccuracy:
        """The stored record (the ``generation`` section's ``accuracy``), shares rounded to 4 digits."""
        return EndpointAccuracy(
            round(self.mean_share, 4), tuple(round(s, 4) for s in self.shares), self.concurrencies,
            MIN_AGREEMENT, self.passed, REFERENCE, self.fillers, self.fake_fillers,
        )  # fmt: skip


def judged(records: Sequence[RequestRecord], prompts: dict[str, Prompt]) -> list[RequestRecord]:
    """Up to ``JUDGED`` ok replies of each judged concurrency (``judged_points``), those with a filler
    first chunk first (the ``first_chunk`` audit judges them by the reference)."""
    chosen = []
    for c in judged_points(sorted({r.concurrency for r in records})):
        candidates = [r for r in records if r.concurrency == c and r.ok and r.salt in prompts]
        chosen += sorted(candidates, key=lambda r: not r.filler_first_chunk)[:JUDGED]
    return chosen


def judged_points(points: Sequence[int]) -> list[int]:
    """The lowest, the highest and the two points at a third and two thirds of the ladder between them
    (every point of a ladder of four or fewer)."""
    last = len(points) - 1
    places = sorted({0, round(last / 3), round(2 * last / 3), last}) if points else []
    return [points[i] for i in places]


def shared_share(reply: str, reference: str) -> float:
    """The share of ``reference`` that ``reply`` repeats from its start."""
    if not reference:
        return 1.0
    reply, reference = reply.lstrip(), reference.lstrip()
    if not reference:
        return 1.0
    same = 0
    for a, b in zip(reply, reference, strict=False):
        if a != b:
            break
        same += 1
    return same / len(reference)


def accuracy(
    model: LlmModel,
    tokenizer: Any,
    chosen: Sequence[RequestRecord],
    prompts: dict[str, Prompt],
    max_tokens: int,
    ctx: GenerationContext,
) -> Accuracy:
    """The chosen replies against torch-eager fp32's replies to their prompts."""
    ids = [list(tokenizer(prompts[r.salt].text, add_special_tokens=False)["input_ids"]) for r in chosen]
    reference = sent_reference(model, ids, max_tokens, ctx) if ids else None
    texts = [
        tokenizer.decode(list(reply.tokens), skip_special_tokens=True)
        for reply in (reference.replies if reference else ())
    ]
    shares = tuple(shared_share(r.text, t) for r, t in zip(chosen, texts, strict=True))
    mean = sum(shares) / len(shares) if shares else 0.0
    fillers = [(r, t) for r, t in zip(chosen, texts, strict=True) if r.filler_first_chunk]
    fake = sum(not t.startswith(r.first_chunk_text) for r, t in fillers)
    concurrencies = tuple(sorted({r.concurrency for r in chosen}))
    return Accuracy(mean, shares, concurrencies, bool(shares) and mean >= MIN_AGREEMENT, len(fillers), fake)
