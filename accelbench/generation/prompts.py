"""The prompts of the decode workload: a fixed, seeded set made by the code (no download), as token ids.

Every stack is given the same token ids (never text), so tokenizers cannot make the stacks differ.

* ``smollm2-135m``: chat prompts. Input lengths (template included) are drawn log-uniformly between
  ``SMOLLM2_LENGTHS`` (32 and 256 tokens: as many short prompts as long ones, the spread of chat traffic;
  512 and a cap of 32 until 2026-12-02, halved so a default run fits its 10 minutes on 2 cores);
  the user message is a request ("Summarize...", "Explain...") followed by seeded sentences built from
  a fixed word list, cut to the drawn length inside the ChatML template (system prompt, user turn,
  ``<|im_start|>assistant``). Replies are capped at ``SMOLLM2_MAX_NEW_TOKENS``.
* ``tiny-llama``: random token ids (uniform over the vocabulary, special tokens excluded), lengths
  uniform between ``TINY_LENGTHS``; replies capped at ``TINY_MAX_NEW_TOKENS``.

``make_prompts(model, count, seed)`` is deterministic in its arguments. These are the prompts' shapes,
not what a stack is timed on: every timed query gets a secret salt (``accelbench.generation.feed``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from accelbench.generation.models import LlmModel

SMOLLM2_LENGTHS = (32, 256)
SMOLLM2_MAX_NEW_TOKENS = 16
TINY_LENGTHS = (8, 48)
TINY_MAX_NEW_TOKENS = 16
_FIRST_ORDINARY_ID = 3
"""SmolLM2's ids 0-2 are <|endoftext|>, <|im_start|>, <|im_end|>."""
_PLACEHOLDER = "\u2063CONTENT\u2063"
_REQUESTS = (
    "Summarize the following notes in one sentence:",
    "Explain what the following text is about:",
    "Write a short title for this passage:",
    "List the main points of these notes:",
    "Answer in one word: what is the topic of this text?",
)
_WORDS = (
    "the",
    "river",
    "city",
    "market",
    "train",
    "morning",
    "engineer",
    "garden",
    "winter",
    "library",
    "music",
    "bridge",
    "harbor",
    "bread",
    "teacher",
    "mountain",
    "window",
    "letter",
    "storm",
    "village",
    "machine",
    "coffee",
    "summer",
    "forest",
    "lamp",
    "school",
    "clock",
    "road",
    "painter",
    "island",
    "kitchen",
    "doctor",
    "festival",
    "field",
    "ocean",
    "story",
    "tower",
    "report",
    "farmer",
    "camera",
    "museum",
    "valley",
    "walks",
    "builds",
    "finds",
    "carries",
    "opens",
    "watches",
    "measures",
    "paints",
    "writes",
    "repairs",
    "visits",
    "grows",
    "counts",
    "sells",
    "quietly",
    "early",
    "often",
    "slowly",
    "together",
    "carefully",
    "again",
    "late",
    "bright",
    "old",
    "small",
    "new",
    "green",
    "cold",
    "busy",
)


@dataclass(frozen=True, slots=True)
class PromptSet:
    """The prompts of one model, with how they were drawn."""

    model: str
    seed: int
    prompts: tuple[tuple[int, ...], ...]
    """Token ids of each prompt, template included."""
    max_new_tokens: int
    """The reply cap: a reply ends at EOS or after this many tokens."""
    length_distribution: str
    salt_head: int = 0
    """Tokens before the user's text (the template's system prompt and user header): a timed query's salt
    goes after them (``accelbench.generation.feed``)."""

    @property
    def input_tokens(self) -> tuple[int, ...]:
        """Length of each prompt in tokens."""
        return tuple(len(p) for p in self.prompts)


def make_prompts(model: LlmModel, count: int, seed: int = 0) -> PromptSet:
    """``count`` prompts for ``model``, deterministic in (model, count, seed)."""
    if count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    rng = np.random.default_rng([seed, count])
    if model.name == "tiny-llama":
        return _tiny_prompts(model, count, seed, rng)
    return _chat_prompts(model, count, seed, rng)


PromptMaker = Callable[[np.random.Generator, int], tuple[int, ...]]
"""Makes one prompt of a given length (template included) from a random generator."""


def prompt_maker(model: LlmModel) -> PromptMaker:
    """``make_prompts``' recipe for one prompt of a given length: how every timed query's prompt is drawn
    afresh from a cell's secret seed (``accelbench.generation.feed``)."""
    if model.name == "tiny-llama":
        return lambda rng, length: _random_ids(model, rng, length)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model.folder)
    prefix, suffix = _template_pieces(tokenizer)

    def make(rng: np.random.Generator, length: int) -> tuple[int, ...]:
        room = length - len(prefix) - len(suffix)
        return tuple(prefix + _encode(tokenizer, _message(rng, room))[:room] + suffix)

    return make


def _random_ids(model: LlmModel, rng: np.random.Generator, length: int) -> tuple[int, ...]:
    return tuple(int(t) for t in rng.integers(_FIRST_ORDINARY_ID, model.vocab_size, size=length))


def _tiny_prompts(model: LlmModel, count: int, seed: int, rng: np.random.Generator) -> PromptSet:
    low, high = TINY_LENGTHS
    lengths = rng.integers(low, high + 1, size=count)
    prompts = tuple(_random_ids(model, rng, int(n)) for n in lengths)
    text = f"uniform integer in [{low}, {high}] tokens; ids uniform in [{_FIRST_ORDINARY_ID}, vocab)"
    return PromptSet(model.name, seed, prompts, TINY_MAX_NEW_TOKENS, text)


def _chat_prompts(model: LlmModel, count: int, seed: int, rng: np.random.Generator) -> PromptSet:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model.folder)
    prefix, suffix = _template_pieces(tokenizer)
    low, high = SMOLLM2_LENGTHS
    lengths = np.exp(rng.uniform(np.log(low), np.log(high + 1), size=count)).astype(int).clip(low, high)
    prompts = []
    for length in lengths:
        room = int(length) - len(prefix) - len(suffix)
        content = _encode(tokenizer, _message(rng, room))[:room]
        prompts.append(tuple(prefix + content + suffix))
    text = f"log-uniform in [{low}, {high}] tokens (ChatML template included)"
    return PromptSet(
        model=model.name,
        seed=seed,
        prompts=tuple(prompts),
        max_new_tokens=SMOLLM2_MAX_NEW_TOKENS,
        length_distribution=text,
        salt_head=len(prefix),
    )


def _template_pieces(tokenizer: Any) -> tuple[list[int], list[int]]:
    """Token ids of the chat template before and after the user message."""
    chat = [{"role": "user", "content": _PLACEHOLDER}]
    text = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    before, _, after = text.partition(_PLACEHOLDER)
    return _encode(tokenizer, before), _encode(tokenizer, after)


def _encode(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def seeded_message(rng: np.random.Generator, tokens: int) -> str:
    """A request and seeded sentences of about ``tokens`` words (the served-LLM prompts' text too)."""
    return _message(rng, tokens)


def seeded_words(rng: np.random.Generator, words: int) -> list[str]:
    """A seeded message's request and exactly ``words`` of its seeded words after it: a served prompt's
    text ends where its count does (``accelbench.endpoint.prompts``), mid-sentence as a rule."""
    message = _message(rng, words).split(" ")
    request = next(len(r.split(" ")) for r in _REQUESTS if " ".join(message).startswith(r))
    return message[: request + words]


def _message(rng: np.random.Generator, tokens: int) -> str:
    """A request and enough seeded sentences to fill ``tokens`` tokens (one word is a token or more)."""
    parts = [str(rng.choice(_REQUESTS))]
    words = 0
    while words < tokens:
        sentence = [str(w) for w in rng.choice(_WORDS, size=int(rng.integers(5, 12)))]
        parts.append(" ".join(sentence).capitalize() + ".")
        words += len(sentence)
    return " ".join(parts)
