"""The served-LLM prompts: a repeat audit's unseen text is as long, in the model's tokens, as its seen one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from accelbench.endpoint.prompts import matched_texts, open_ended, seeded_texts


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from transformers import AutoTokenizer

    from accelbench.generation.models import load_model

    model = load_model("tiny-llama", Path(tmp_path_factory.mktemp("models")))
    tokenizer = AutoTokenizer.from_pretrained(model.folder)
    return lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])


def test_each_unseen_text_has_its_seen_texts_token_count_within_one_word(tokens: Any) -> None:
    seen = seeded_texts(3, (8, 400), 24, "point", 1)
    unseen = matched_texts(3, seen, tokens, "repeat-unseen")
    assert len(unseen) == len(seen) and not set(unseen) & set(seen)
    for a, b in zip(seen, unseen, strict=True):
        shorter = open_ended(" ".join(b.split(" ")[:-1]))
        assert tokens(shorter) < tokens(a) <= tokens(b)  # the shortest word prefix that reaches it
        assert tokens(b) - tokens(a) <= 6, (a, b)
    assert max(tokens(a) for a in seen) > 4 * min(tokens(a) for a in seen)  # the lengths do differ


def test_the_unseen_texts_follow_the_secret_seed() -> None:
    seen = seeded_texts(3, (8, 64), 4, "point", 1)
    assert matched_texts(3, seen, len, "x") == matched_texts(3, seen, len, "x")
    assert matched_texts(3, seen, len, "x") != matched_texts(4, seen, len, "x")


def test_an_unseen_text_ends_like_a_timed_one(tokens: Any) -> None:
    """A server must not tell the repeat audit's unseen texts by their ending: the timed texts end where
    their drawn word count does, as the unseen ones end where their token count does (word prefixes)."""
    seen = seeded_texts(5, (8, 120), 300, "point", 2)
    unseen = matched_texts(5, seen, tokens, "repeat-unseen")

    def full_stop_share(texts: list[str]) -> float:
        return sum(t.endswith(".") for t in texts) / len(texts)

    def last_fragment_words(texts: list[str]) -> float:
        return sum(len(t.rsplit(".", 1)[-1].split()) for t in texts) / len(texts)

    assert abs(full_stop_share(seen) - full_stop_share(unseen)) < 0.08
    assert full_stop_share(seen) < 0.3  # mid-sentence as a rule, both
    assert abs(last_fragment_words(seen) - last_fragment_words(unseen)) < 1.0
    lengths = [len(t.split(" ")) for t in seeded_texts(5, (8, 120), 300, "point", 3)]
    assert min(lengths) >= 8 + 5 and max(lengths) <= 120 + 10  # a request of 5-10 words, then 8-120
