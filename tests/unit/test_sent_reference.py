"""The reference replies a served cell judges against (``generation.reference.sent_reference``): without
margins (the served checks judge text) the replies are the same ones, and no margin is made."""

from __future__ import annotations

from pathlib import Path


def test_the_served_reference_without_margins_makes_the_same_replies(tmp_path: Path) -> None:
    from accelbench.generation.base import GenerationContext
    from accelbench.generation.models import load_model
    from accelbench.generation.reference import sent_reference

    model = load_model("tiny-llama", tmp_path / "models")
    ctx = GenerationContext(tmp_path / "stacks", threads=1)
    prompts = [[5, 17, 92, 301, 44], [7, 7, 300, 12]]
    full = sent_reference(model, prompts, 6, ctx)
    bare = sent_reference(model, prompts, 6, ctx, margins=False)
    assert [r.tokens for r in bare.replies] == [r.tokens for r in full.replies]
    assert all(len(r.tokens) >= 1 for r in bare.replies)
    assert bare.margins == [] and [len(m) for m in full.margins] == [len(r.tokens) for r in full.replies]
