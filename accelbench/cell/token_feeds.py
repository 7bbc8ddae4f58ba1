"""The prompt feeds of a generative cell: a fresh salted feed for every LoadGen run, and the replies
drawn for judging after the scored run."""

from __future__ import annotations

from collections.abc import Sequence

from accelbench.generation.feed import REPEAT, PromptFeed, SaltPlace
from accelbench.generation.loadgen_tokens import TokenFigures
from accelbench.generation.models import LlmModel
from accelbench.generation.prompts import PromptSet, prompt_maker

JUDGED_REPLIES = 16
"""Replies to never-seen prompts judged against torch-eager's, drawn at random from the scored run's."""


class TokenFeeds:
    """A fresh ``PromptFeed`` for every LoadGen run (and the calibration), each its own stream of the
    cell's input seed."""

    def __init__(
        self, timed: Sequence[Sequence[int]], prompts: PromptSet, model: LlmModel, seed: int
    ) -> None:
        self.timed = [tuple(p) for p in timed]
        self.place = SaltPlace(prompts.salt_head, model.vocab_size)
        self.maker = prompt_maker(model)
        self.seed = seed
        self.made = 0

    def new(self) -> PromptFeed:
        """The next feed."""
        self.made += 1
        return PromptFeed(self.timed, self.place, (self.seed, self.made), self.maker)

    def judged(self, run: TokenFigures) -> list[int]:
        """Indices into ``run.replies`` of up to ``JUDGED_REPLIES`` replies to never-seen prompts, drawn
        at random, and of every reply to a never-seen prompt that is EOS alone (it must be the model's)."""
        import numpy as np

        unseen = [i for i, sent in enumerate(run.sent) if sent.role != REPEAT]
        rng = np.random.default_rng([self.seed, 0])
        count = min(JUDGED_REPLIES, len(unseen))
        drawn = {int(i) for i in rng.choice(unseen, size=count, replace=False)} if count else set()
        return sorted(drawn | {i for i in unseen if len(run.replies[i].tokens) < 2})
