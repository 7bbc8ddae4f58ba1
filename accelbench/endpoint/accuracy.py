"""The accuracy check of a served LLM: ok replies of the curve drawn at random against torch-eager
fp32's greedy replies to the same salted prompts (``accelbench.generation.reference``).

Which replies are judged is drawn after the curve, from the cell's secret input seed, across every ok
reply of every point (``judged``; issue 40 item 5): a server that answers the first requests of a
point, or those shaped like audits, honestly and cheats on the rest cannot tell which ones will be
judged. ``judged_count`` replies (more on small models, whose reference is cheap), then up to
``FLAGGED_MORE`` of the replies that begin with a filler chunk or end in a repeated tail
(``accelbench.endpoint.padding``), drawn the same way: the reference says whether the model made them.

A reply agrees by the share of the reference's text (EOS and special tokens dropped) that it repeats
from its start: text, not ids, so the client's re-tokenizing cannot count against it, and a server
made to run on past EOS (``transformers serve`` with every special token suppressed, ``ignore_eos``
elsewhere) is judged on the reference's length. The check passes when the mean share reaches
``MIN_AGREEMENT`` and no more than ``FLOOR_MISSES`` of the replies share less than ``MIN_REPLY_SHARE``
(a per-reply floor: a mean hides a few garbage replies among good ones; greedy decoding on other
kernels may leave the reference at a near tie, so one reply in eight may). A judged reply that ends in
filler the reference does not have is ``padded`` (the ``padding`` audit disqualifies). One that agrees
with the reference to its EOS and runs on in a loop is judged against the reference continued past its
EOS in each way a server may run on (``run_on``; ``accelbench.generation.reference.RUN_ON``): padded
only when it is padded against every one. Whether the server was told to run on does not matter: a
server can ignore EOS unasked (stop 61: ``transformers serve`` keeps a generation config that
suppresses special tokens from an earlier request; its honest continuation, a loop, was flagged by the
reference that stops at EOS), and one told to may pad past EOS as well as before it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from accelbench.cell.seeds import sub_seed
from accelbench.curve import EndpointAccuracy
from accelbench.endpoint.client import Prompt
from accelbench.endpoint.padding import padded, parting, repeated_tail
from accelbench.endpoint.records import RequestRecord
from accelbench.generation.base import GenerationContext
from accelbench.generation.models import LlmModel
from accelbench.generation.reference import run_on_reference, sent_reference

JUDGED_SMALL = 16
"""Replies judged on a model under ``SMALL_PARAMS`` (its reference replies take seconds each on CPU)."""
JUDGED_LARGE = 8
SMALL_PARAMS = 1_000_000_000
FLAGGED_MORE = 4
"""Replies with a filler first chunk or a repeated tail judged beside the drawn ones, at most."""
MIN_AGREEMENT = 0.6
MIN_REPLY_SHARE = 0.2
FAKE_GAIN = 0.5
"""How much more of the reference a reply must repeat without its first chunk for the chunk to be fake."""
FLOOR_MISSES = 0.125
"""The share of judged replies that may fall below ``MIN_REPLY_SHARE`` (one in eight)."""
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
    """Judged replies whose first chunk is not the model's (``fake_first_chunk``)."""
    padded: int = 0
    """Judged replies that end in repeated filler where they leave the reference (``padding``)."""
    below_floor: int = 0
    """Judged replies that share less than ``MIN_REPLY_SHARE`` of the reference's text."""
    flagged: int = 0
    """Judged replies with a filler first chunk or a repeated tail (``flagged``)."""

    @property
    def floor_failed(self) -> bool:
        """More than ``FLOOR_MISSES`` of the judged replies fell below the per-reply floor."""
        return self.below_floor > FLOOR_MISSES * len(self.shares)

    def record(self) -> EndpointAccuracy:
        """The stored record (the ``generation`` section's ``accuracy``), shares rounded to 4 digits."""
        return EndpointAccuracy(
            mean_share=round(self.mean_share, 4),
            shares=tuple(round(s, 4) for s in self.shares),
            concurrencies=self.concurrencies,
            bar=MIN_AGREEMENT,
            passed=self.passed,
            reference=REFERENCE,
            fillers=self.fillers,
            fake_fillers=self.fake_fillers,
        )


def judged_count(params: int) -> int:
    """How many drawn replies are judged on a model of ``params`` parameters."""
    return JUDGED_SMALL if params < SMALL_PARAMS else JUDGED_LARGE


def is_flagged(record: RequestRecord) -> bool:
    """An ok reply that begins with a filler chunk or ends in a repeated tail."""
    return record.ok and (record.filler_first_chunk or repeated_tail(record.text) is not None)


def flagged(records: Sequence[RequestRecord]) -> set[str]:
    """The salts of the flagged replies (``is_flagged``)."""
    return {r.salt for r in records if is_flagged(r)}


def judged(
    records: Sequence[RequestRecord], prompts: dict[str, Prompt], input_seed: int, count: int
) -> list[RequestRecord]:
    """``count`` ok replies drawn from ``input_seed`` across every point, then up to ``FLAGGED_MORE``
    of the flagged ones left (``flagged``), drawn the same way; in the records' order."""
    pool = [r for r in records if r.ok and r.salt in prompts]
    rng = np.random.default_rng(sub_seed(input_seed, "judged"))
    drawn = {pool[int(i)].salt for i in rng.permutation(len(pool))[:count]}
    marked = flagged(pool)
    left = [r for r in pool if r.salt in marked and r.salt not in drawn]
    drawn |= {left[int(i)].salt for i in rng.permutation(len(left))[:FLAGGED_MORE]}
    return [r for r in pool if r.salt in drawn]


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
    reference = sent_reference(model, ids, max_tokens, ctx, margins=False) if ids else None
    texts = [
        tokenizer.decode(list(reply.tokens), skip_special_tokens=True)
        for reply in (reference.replies if reference else ())
    ]
    lengths = [max_tokens] * len(chosen)
    return judge(chosen, texts, run_on(model, tokenizer, (chosen, texts), (ids, lengths), ctx))


def runs_on(reply: str, reference: str) -> bool:
    """Whether ``reply`` agrees with ``reference`` to its end and goes on past it."""
    reply, reference = reply.lstrip(), reference.lstrip()
    return len(reply) > len(reference) and parting(reply, reference) >= len(reference)


def run_on(
    model: LlmModel,
    tokenizer: Any,
    judged: tuple[Sequence[RequestRecord], Sequence[str]],
    sent: tuple[Sequence[Sequence[int]], Sequence[int]],
    ctx: GenerationContext,
) -> dict[int, tuple[str, ...]]:
    """The judged replies (``judged``: the records and their reference texts) that run on past the
    reference's end in a loop padded against it: for each, by its index, the reference's texts continued
    past EOS in each way of ``RUN_ON``, cut to the reply's length (``sent``: the prompts' ids and each
    reply's length asked). Made only for those replies (none on most runs), one reply at a time, and for
    none after the first reply padded in every way: the cell fails then, so a server that pads every reply
    cannot make the audit generate three continuations of each (about 4 minutes on smollm2 for 20
    judged replies); the replies left are judged by the EOS reference alone (``judge``)."""
    chosen, texts = judged
    ids, lengths = sent
    on = [
        i
        for i, (r, t) in enumerate(zip(chosen, texts, strict=True))
        if runs_on(r.text, t) and padded(r.text, t)
    ]
    if not on:
        return {}
    special = frozenset(int(i) for i in tokenizer.all_special_ids)
    made = run_on_reference(model, [ids[i] for i in on], max(lengths[i] for i in on), special, ctx)
    found: dict[int, tuple[str, ...]] = {}
    for i, ways in zip(on, made, strict=False):  # made one at a time: stopping stops the making
        found[i] = tuple(tokenizer.decode(list(t[: lengths[i]]), skip_special_tokens=True) for t in ways)
        if all(padded(chosen[i].text, way) for way in found[i]):
            break
    return found


def fake_first_chunk(record: RequestRecord, reference: str) -> bool:
    """A first chunk that the reply it starts does not account for: a filler the reference does not
    begin with, or any chunk without which the reply repeats ``FAKE_GAIN`` more of the reference (text
    put before the model's reply to stop the TTFT clock early)."""
    first = record.first_chunk_text
    if not first:
        return False
    if record.filler_first_chunk and not reference.startswith(first):
        return True
    rest = record.text[len(first) :]
    return shared_share(rest, reference) >= shared_share(record.text, reference) + FAKE_GAIN


def judge(
    chosen: Sequence[RequestRecord],
    texts: Sequence[str],
    continued: Mapping[int, Sequence[str]] | None = None,
) -> Accuracy:
    """The chosen replies against the reference's ``texts`` (one each, in order); ``continued``: for the
    replies that run on past the reference's EOS, by index, the reference continued past it (``run_on``)."""
    shares = tuple(shared_share(r.text, t) for r, t in zip(chosen, texts, strict=True))
    mean = sum(shares) / len(shares) if shares else 0.0
    fillers = [(r, t) for r, t in zip(chosen, texts, strict=True) if r.filler_first_chunk]
    fake = sum(fake_first_chunk(r, t) for r, t in zip(chosen, texts, strict=True))
    concurrencies = tuple(sorted({r.concurrency for r in chosen}))
    below = sum(share < MIN_REPLY_SHARE for share in shares)
    ways = continued or {}
    return Accuracy(
        mean_share=mean,
        shares=shares,
        concurrencies=concurrencies,
        passed=bool(shares) and mean >= MIN_AGREEMENT and below <= FLOOR_MISSES * len(shares),
        fillers=len(fillers),
        fake_fillers=fake,
        padded=sum(
            all(padded(r.text, t) for t in (text, *ways.get(i, ())))
            for i, (r, text) in enumerate(zip(chosen, texts, strict=True))
        ),
        below_floor=below,
        flagged=sum(map(is_flagged, chosen)),
    )
