"""The reference replies of a generative cell: torch-eager fp32's greedy replies and their logit margins.

Two references: ``prompt_reference`` to the workload's prompts (made once per run and model, kept in the
run's cache folder: it says which prompts have a reply of 2+ tokens, the timed set), and
``sent_reference`` to the salted prompts a cell's timed queries were actually sent (made in the cell after
its timed run, for the replies the quality gate judges: the salts are the cell's secret). A judged reply that
runs on past the reference's EOS is judged against ``run_on_reference``: the reference continued past its
EOS in each way a server may be made to (or may, unasked) run on.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from accelbench.files import read_json
from accelbench.generation.base import GenerationContext, GenerationStack, Generator, Reply
from accelbench.generation.models import LlmModel
from accelbench.generation.quality import reference_margins
from accelbench.generation.torch_stacks import TorchEagerGenerator
from accelbench.outputs import write_json_atomic
from accelbench.registry import GENERATING_STACKS, instantiate

REFERENCE = "torch-eager"


class Reference:
    """torch-eager fp32's replies to a list of prompts and their logit margins."""

    def __init__(self, replies: Sequence[Reply], margins: Sequence[Sequence[float]]) -> None:
        self.replies = tuple(replies)
        self.margins = [list(m) for m in margins]


def _torch_eager(model: LlmModel, ctx: GenerationContext) -> Generator:
    stack: GenerationStack = instantiate(GENERATING_STACKS[REFERENCE])
    return stack.prepare(model, ctx)


def _replies_and_margins(
    generator: Generator, prompts: Sequence[Sequence[int]], max_new_tokens: int, margins: bool = True
) -> tuple[list[list[int]], list[list[float]]]:
    """The greedy replies to ``prompts`` and, with ``margins``, their teacher-forced logit margins (else
    none: a pass over every prompt and reply saved)."""
    replies = [generator.generate(p, max_new_tokens) for p in prompts]
    found = reference_margins(generator.model, prompts, replies) if margins else []  # type: ignore[attr-defined]
    return [list(r.tokens) for r in replies], found


def _from_tokens(replies: Sequence[Sequence[int]], margins: Sequence[Sequence[float]]) -> Reference:
    made = [Reply(tuple(tokens), 0.0, 0.0, tokens[0] if tokens else -1) for tokens in replies]
    return Reference(made, margins)


def prompt_reference(
    model: LlmModel, prompts: Sequence[Sequence[int]], max_new_tokens: int, path: Path, ctx: GenerationContext
) -> Reference:
    """The reference replies to ``prompts``, read from ``path`` or made now by torch-eager (and kept there:
    each run makes its own, so a stored reference never outlives the code that made it)."""
    if not path.exists():
        replies, margins = _replies_and_margins(_torch_eager(model, ctx), prompts, max_new_tokens)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, {"replies": replies, "margins": margins})
    stored = read_json(path, "reference replies", finite=False)
    return _from_tokens(stored["replies"], stored["margins"])


def sent_reference(
    model: LlmModel,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    ctx: GenerationContext,
    margins: bool = True,
) -> Reference:
    """The reference replies to ``prompts`` (the salted prompts of judged queries), made now; without
    ``margins`` none are computed (the served checks judge a reply's text, not its near-ties: the
    teacher-forced pass was 16 of a served cell's 76 s of reference work on smollm2-135m, stop 64)."""
    return _from_tokens(*_replies_and_margins(_torch_eager(model, ctx), prompts, max_new_tokens, margins))


RUN_ON = ("eos kept", "eos barred", "special barred")
"""How a server runs on past EOS, one reference each: EOS chosen and kept in the context (vLLM's
``ignore_eos``), EOS never chosen, no special token chosen (``transformers serve`` with
``suppress_tokens``; llama.cpp's ``ignore_eos`` bars its end-of-generation tokens, between the two)."""


def run_on_reference(
    model: LlmModel,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    special: frozenset[int],
    ctx: GenerationContext,
) -> Iterator[tuple[tuple[int, ...], ...]]:
    """For each of ``prompts`` in turn, torch-eager fp32's greedy replies of ``max_new_tokens`` that do not
    stop at EOS, one per way of ``RUN_ON`` (``special``: the tokenizer's special ids). Made as they are
    asked for (a caller that stops early makes no more), the model prepared once, at the first."""
    generator = _torch_eager(model, ctx)
    if not isinstance(generator, TorchEagerGenerator):
        raise TypeError(f"the reference stack {REFERENCE} prepared a {type(generator).__name__}")
    barred: tuple[frozenset[int], ...] = (frozenset(), frozenset({model.eos_token_id}), special)
    for prompt in prompts:
        yield tuple(tuple(generator.run_on(prompt, max_new_tokens, bar)) for bar in barred)
