"""The padding audit's false alarm of stop 61, replayed on smollm2-135m: an honest ``transformers serve``
that ignored EOS unasked (a generation config suppressing special tokens, kept from an earlier request)
ran its reply to request 0 of a c=8 point on past the reference's EOS into a loop of its own; the
reference that stops at EOS flagged it as padded (one round of four disqualified). The reply is the
model's greedy continuation with special tokens barred (the served text matched it, 296 of 296
characters), and judged against the reference run on past EOS it is not padded. The same prompt's
reference padded with filler past its EOS still is. Exhaustive: builds smollm2's folder (~1 min)."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelbench.endpoint.accuracy import judge, run_on
from accelbench.endpoint.padding import padded
from accelbench.endpoint.prompts import salted, seeded_texts
from accelbench.generation.base import GenerationContext
from accelbench.generation.models import load_model, missing_packages
from accelbench.generation.prompts import SMOLLM2_LENGTHS
from accelbench.generation.reference import sent_reference
from accelbench.generation.torch_stacks import TorchEager, TorchEagerGenerator
from tests.e2e.replies import served_reply

pytestmark = [
    pytest.mark.skipif(bool(missing_packages()), reason=f"llm extra missing: {missing_packages()}"),
    pytest.mark.exhaustive,
]

SEED = 8829940584979986854
"""The cell seed of stop 61's first c=8 round (``benchmarks/llm_endpoint_agreement.py``, 32 requests)."""
MAX_TOKENS = 64


def test_the_models_own_run_on_past_eos_is_not_padding(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    model = load_model("smollm2-135m", tmp_path / "cache")
    tokenizer = AutoTokenizer.from_pretrained(model.folder)
    texts = seeded_texts(SEED, SMOLLM2_LENGTHS, 32, "point", 8)
    prompt = salted(tokenizer, SEED, texts, "point", 8)[0]
    ids = list(tokenizer(prompt.text, add_special_tokens=False)["input_ids"])
    ctx = GenerationContext(tmp_path / "llm-stacks")
    (reply,) = sent_reference(model, [ids], MAX_TOKENS, ctx).replies
    assert reply.tokens[-1] == model.eos_token_id and len(reply.tokens) < MAX_TOKENS
    eos_text = str(tokenizer.decode(list(reply.tokens), skip_special_tokens=True))
    barred = frozenset(int(i) for i in tokenizer.all_special_ids)
    generator = TorchEager().prepare(model, ctx)
    assert isinstance(generator, TorchEagerGenerator)
    served = str(tokenizer.decode(generator.run_on(ids, MAX_TOKENS, barred), skip_special_tokens=True))
    assert padded(served, eos_text)  # the stop-61 false alarm: the rule that stops at EOS flags it
    honest, filler = served_reply(served, MAX_TOKENS, 8), served_reply(eos_text + " the" * 40, MAX_TOKENS, 8)
    ways = run_on(model, tokenizer, ([honest, filler], [eos_text] * 2), ([ids] * 2, [MAX_TOKENS] * 2), ctx)
    assert judge([honest], [eos_text], {0: ways[0]}).padded == 0
    assert judge([filler], [eos_text], {0: ways[1]}).padded == 1
