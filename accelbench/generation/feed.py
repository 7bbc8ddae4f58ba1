"""What each timed LLM query is sent: every prompt unique, and in-run repeats paired with controls.

* **Drawn afresh.** Each query's prompt is made anew from the cell's secret input seed by the workload's
  recipe (``prompts.prompt_maker``: new seeded sentences for smollm2, new random ids for tiny-llama) at
  the length of the workload's prompt LoadGen picked, so no prompt content recurs across queries (a cache
  that strips the salt below finds nothing either).
* **Salt.** Each prompt also gets a salt of ``salt_tokens`` token ids (at least ``SALT_BITS`` bits) drawn
  from the same seed, placed where the user's text starts (after the chat template's system prompt, as
  MLPerf Endpoints does; at the start for a prompt without template): a timed prompt is
  ``salt_tokens`` longer than the workload's (5 tokens with a 49152-id vocabulary). A reply cache or a
  KV prefix cache keyed by anything after the system prompt has nothing to hit; the system prompt is the
  same for every query and may be cached (as a server may).
* **Pairs.** In every block of ``BLOCK_CALLS`` calls, ``PAIRS_PER_BLOCK`` calls are drawn as sources:
  ``distance`` calls later (drawn in 1..``MAX_DISTANCE``) the source's prompt is sent again (a
  *repeat*: the only prompt a cache could have seen), and one or two calls before or after the repeat a
  never-seen prompt of the same length (its *control*). ``timing_audits.repeat_audit`` compares the two.
  A cache gains only on repeats, and every repeat is compared with its control.

LoadGen's sample index picks the length of a fresh call's prompt; a repeat or a control overrides it
(LoadGen reads no reply content, and the quality gate judges the prompt that was sent).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

SALT_BITS = 64
BLOCK_CALLS = 16
PAIRS_PER_BLOCK = 3
MAX_DISTANCE = 12
FRESH, REPEAT, CONTROL = "fresh", "repeat", "control"


@dataclass(frozen=True, slots=True)
class Sent:
    """The prompt one call was sent, and what it was for."""

    prompt: tuple[int, ...]
    base: int
    """Index of the workload's prompt it was made from (its length class)."""
    role: str
    """``fresh`` (never sent before), ``repeat`` (sent before, in pair ``pair``) or ``control`` (never sent
    before: the repeat's partner of the same length)."""
    pair: int = -1
    distance: int = 0
    """For a repeat: calls since its prompt was sent first."""


@dataclass(frozen=True, slots=True)
class SaltPlace:
    """Where a prompt set's salt goes: after ``head`` tokens (the system prompt and the user header), in a
    vocabulary of ``vocab_size`` ids of which the first ``first_id`` are special."""

    head: int
    vocab_size: int
    first_id: int = 3

    @property
    def salt_tokens(self) -> int:
        """Tokens needed for ``SALT_BITS`` bits of salt."""
        return math.ceil(SALT_BITS / math.log2(self.vocab_size - self.first_id))


def salted(prompt: Sequence[int], salt: Sequence[int], place: SaltPlace) -> tuple[int, ...]:
    """``prompt`` with ``salt`` inserted after its head (the system prompt)."""
    return (*prompt[: place.head], *salt, *prompt[place.head :])


class PromptFeed:
    """Hands each call its ``Sent``, in call order (one caller thread); see the module text."""

    def __init__(
        self,
        prompts: Sequence[Sequence[int]],
        place: SaltPlace,
        seed: Sequence[int],
        maker: Callable[[np.random.Generator, int], tuple[int, ...]] | None = None,
    ) -> None:
        """``maker`` makes a prompt of a given length (``prompts.prompt_maker``); without it a query is
        sent the workload's prompt ``index`` salted."""
        self.prompts = [tuple(p) for p in prompts]
        self.place = place
        self.maker = maker
        self.rng = np.random.default_rng(list(seed))
        self.calls = 0
        self.pairs = 0
        self.planned: dict[int, Sent] = {}
        self.sources: set[int] = set()

    def salt(self) -> tuple[int, ...]:
        """A fresh salt: ``place.salt_tokens`` ordinary ids."""
        ids = self.rng.integers(self.place.first_id, self.place.vocab_size, size=self.place.salt_tokens)
        return tuple(int(i) for i in ids)

    def fresh(self, base: int) -> tuple[int, ...]:
        """A never-sent prompt as long as prompt ``base``, salted."""
        made = self.maker(self.rng, len(self.prompts[base])) if self.maker else self.prompts[base]
        return salted(made, self.salt(), self.place)

    def next(self, index: int) -> Sent:
        """What call number ``self.calls`` sends; ``index`` is LoadGen's pick of the prompt."""
        call = self.calls
        self.calls += 1
        if call % BLOCK_CALLS == 0:
            offsets = self.rng.choice(BLOCK_CALLS, size=PAIRS_PER_BLOCK, replace=False)
            self.sources |= {call + int(o) for o in offsets}
        planned = self.planned.pop(call, None)
        if planned is not None:
            if planned.role == CONTROL:
                return Sent(self.fresh(planned.base), planned.base, CONTROL, planned.pair)
            return planned
        sent = Sent(self.fresh(index), index, FRESH)
        if call in self.sources:
            self._plan_pair(call, sent)
        return sent

    def _plan_pair(self, call: int, source: Sent) -> None:
        """A repeat of ``source`` some calls after ``call``, and its control next to the repeat."""
        distance = int(self.rng.integers(1, MAX_DISTANCE + 1))
        repeat = self._free_from(call + distance)
        offset = int(self.rng.choice((-2, -1, 1, 2)))
        control = repeat + offset
        if control <= call or control in self.planned or control == repeat:
            control = self._free_from(repeat + 1)
        pair = self.pairs
        self.pairs += 1
        self.planned[repeat] = Sent(source.prompt, source.base, REPEAT, pair, repeat - call)
        self.planned[control] = Sent((), source.base, CONTROL, pair)

    def _free_from(self, call: int) -> int:
        while call in self.planned:
            call += 1
        return call
