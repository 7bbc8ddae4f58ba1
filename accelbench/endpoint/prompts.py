"""The salted prompts of an endpoint cell: a fixed system prompt, then the salt, then seeded text.

Every request gets its own salt of ``SALT_BITS`` bits drawn from the cell's secret input seed
(``CellSpec.input_seed``), rendered as hex digits at the head of the user message, right after the
system prompt: a server's prefix cache may reuse the system prompt (honest: every request shares it),
never a whole prompt. The user text's length is drawn log-uniform between the workload's prompt lengths
(words; ``length_text`` states it); ``transformers serve`` CB shares cache pages of 256 tokens, and the
salt sits inside the first page.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from accelbench.cell.seeds import sub_seed
from accelbench.endpoint.client import Prompt
from accelbench.generation.prompts import seeded_message, seeded_words

SYSTEM_PROMPT = "You are a helpful assistant. Answer the request in plain prose."
SALT_BITS = 126
"""Two 63-bit keyed draws of the input seed: 32 hex digits."""


def salt_hex(input_seed: int, *parts: object) -> str:
    """The salt of the request named by ``parts``: 32 hex digits from the cell's input seed."""
    high, low = sub_seed(input_seed, "salt", *parts, 0), sub_seed(input_seed, "salt", *parts, 1)
    return f"{high:016x}{low:016x}"


def length_text(lengths: tuple[int, int]) -> str:
    """The stated distribution of the user text's length."""
    return (
        f"a request, then log-uniform in [{lengths[0]}, {lengths[1]}] words, after the salt "
        "(system prompt fixed)"
    )


def make_prompt(tokenizer: Any, salt: str, text: str) -> Prompt:
    """The prompt with ``salt`` after the system prompt and ``text`` after it."""
    messages = ({"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": f"[{salt}] {text}"})
    templated = tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
    return Prompt(salt, messages, str(templated))


def seeded_texts(input_seed: int, lengths: tuple[int, int], count: int, *parts: object) -> list[str]:
    """``count`` user texts drawn from the input seed (the stream named by ``parts``): a seeded request
    and ``n`` seeded words, ``n`` drawn log-uniform. Every served text ends where its count does (here
    words; the repeat audit's unseen texts, ``matched_texts``, tokens), mid-sentence as a rule and never
    with a full stop (``open_ended``): a server cannot tell an audit's text by how it ends."""
    rng = np.random.default_rng(sub_seed(input_seed, "text", *parts))
    low, high = lengths
    words = np.exp(rng.uniform(np.log(low), np.log(high + 1), size=count)).astype(int).clip(low, high)
    return [open_ended(" ".join(seeded_words(rng, int(n)))) for n in words]


def open_ended(text: str) -> str:
    """``text`` without a closing full stop: where a count ends a text on a sentence's last word, its
    full stop would be a tell of how the count was taken (a token count ends there more often than a
    word count, the full stop being a token of its own)."""
    return text.removesuffix(".")


def matched_texts(
    input_seed: int, texts: Sequence[str], count: Callable[[str], int], *parts: object
) -> list[str]:
    """A never-sent text for each of ``texts``, of its token count by ``count`` (the shortest seeded
    word prefix that reaches it): a pair then differs in content only, never in prefill work."""
    rng = np.random.default_rng(sub_seed(input_seed, "text", *parts))
    return [text_of_tokens(rng, count(text), count) for text in texts]


def text_of_tokens(rng: np.random.Generator, tokens: int, count: Callable[[str], int]) -> str:
    """The shortest prefix, in words, of a seeded message that ``count`` gives ``tokens`` or more (a
    word's few tokens over at most: the words are a token or more each)."""
    words = seeded_message(rng, max(tokens, 1)).split(" ")
    low, high = 1, len(words)
    while low < high:
        middle = (low + high) // 2
        if count(open_ended(" ".join(words[:middle]))) >= tokens:
            high = middle
        else:
            low = middle + 1
    return open_ended(" ".join(words[:low]))


def salted(tokenizer: Any, input_seed: int, texts: Sequence[str], *parts: object) -> list[Prompt]:
    """``texts`` each with a fresh salt (stream ``parts``, request number)."""
    return [make_prompt(tokenizer, salt_hex(input_seed, *parts, i), t) for i, t in enumerate(texts)]
