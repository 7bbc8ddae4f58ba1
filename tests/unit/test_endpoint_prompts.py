"""The served-LLM prompts: a repeat audit's unseen text is as long, in the model's tokens, as its seen one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from accelbench.endpoint.prompts import matched_texts, seeded_texts


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
        shorter = " ".join(b.split(" ")[:-1])
        assert tokens(shorter) < tokens(a) <= tokens(b)  # the shortest word prefix that reaches it
        assert tokens(b) - tokens(a) <= 6, (a, b)
    assert max(tokens(a) for a in seen) > 4 * min(tokens(a) for a in seen)  # the lengths do differ


def test_the_unseen_texts_follow_the_secret_seed() -> None:
    seen = seeded_texts(3, (8, 64), 4, "point", 1)
    assert matched_texts(3, seen, len, "x") == matched_texts(3, seen, len, "x")
    assert matched_texts(3, seen, len, "x") != matched_texts(4, seen, len, "x")
