"""Planted LLM cheaters: generating stacks a dishonest vendor could ship, each a torch-eager that returns
the exact replies but saves work on prompts it has seen. ``test_planted_llm_cheaters`` installs them as
plugins (the ``accelbench.generation_stacks`` entry point), as a third party would.

* ``planted-llm-reply-cache``: answers a prompt seen before from its reply cache, but never the prompt of
  the previous call (an immediate repeat is what an audit sends).
* ``planted-llm-early-token``: remembers every prompt's first token and reports it at once when the prompt
  comes again, then does the work (prefill and decode) as usual: TTFT near zero, reply exact.
* ``planted-llm-prefix-kv``: keeps the KV cache after each prefill and starts a prompt from the longest
  prefix it shares with a prompt seen before (only the tokens after it are prefilled).
* ``planted-llm-noisy-cache``: the reply cache, and a process it detaches (a new session, its parent
  gone) that keeps a quarter of a core busy while the SUT process lives, so that its run would look
  disturbed from outside and its timing audits' failure would not convict (``accelbench.audits.status``).
  The orphan is the run's own (re-parented to the cell, ``accelbench.meters.cputime.adopt_orphans``):
  still disqualified.
"""

from __future__ import annotations

import copy
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any

from accelbench.generation.base import GenerationContext, Generator
from accelbench.generation.models import LlmModel
from accelbench.generation.torch_stacks import TorchEager, TorchEagerGenerator

LLM_CHEATS = {
    "planted-llm-reply-cache": "tests.e2e.planted_llm:ReplyCacheStack",
    "planted-llm-early-token": "tests.e2e.planted_llm:EarlyTokenStack",
    "planted-llm-prefix-kv": "tests.e2e.planted_llm:PrefixKvStack",
    "planted-llm-noisy-cache": "tests.e2e.planted_llm:NoisyCacheStack",
}

SPIN = """
import os, sys, time
sut, until, log = int(sys.argv[1]), time.monotonic() + 900, sys.argv[2:]
while time.monotonic() < until:
    try:
        os.kill(sut, 0)
    except OSError:
        break
    spun = time.monotonic() + 0.01
    while time.monotonic() < spun:
        pass
    time.sleep(0.03)
    if log:  # written aside, then renamed: a kill mid-write never leaves an empty log
        with open(f"{log[0]}-part-{os.getpid()}", "w") as out:
            out.write(f"{time.process_time()}")
        os.replace(f"{log[0]}-part-{os.getpid()}", f"{log[0]}.{os.getpid()}")
"""
"""The detached load: a quarter of a core (spin 10 ms, sleep 30 ms) until the SUT process is gone (900 s
at most): 2.5 times the other-load limit of a 2-core machine, were it outside the run. It keeps the CPU
seconds it spun in ``<path>.<pid>``, where ``SPIN_LOG`` in its environment names a path (it may be killed
with the cell, so it writes as it goes, each figure whole)."""
SPIN_LOG = "PLANTED_SPIN_LOG"


class ReplyCache(TorchEagerGenerator):
    """Replies from a cache to a prompt seen before, unless it was the previous call's."""

    def __init__(self, hf_model: Any, eos_token_id: int) -> None:
        super().__init__(hf_model, eos_token_id)
        self.replies: dict[tuple[int, ...], list[int]] = {}
        self.previous: tuple[int, ...] = ()

    def _run(self, prompt: Sequence[int], max_new_tokens: int, first: Callable[[int], None]) -> list[int]:
        key = (*prompt, max_new_tokens)
        immediate, self.previous = key == self.previous, key
        if key in self.replies and not immediate:
            first(self.replies[key][0])
            return list(self.replies[key])
        self.replies[key] = super()._run(prompt, max_new_tokens, first)
        return list(self.replies[key])


class EarlyToken(TorchEagerGenerator):
    """Reports a remembered first token before any work, then generates as usual."""

    def __init__(self, hf_model: Any, eos_token_id: int) -> None:
        super().__init__(hf_model, eos_token_id)
        self.first_tokens: dict[tuple[int, ...], int] = {}

    def _run(self, prompt: Sequence[int], max_new_tokens: int, first: Callable[[int], None]) -> list[int]:
        key = tuple(prompt)
        remembered = self.first_tokens.get(key)
        if remembered is not None:
            first(remembered)
            return super()._run(prompt, max_new_tokens, lambda token: None)
        tokens = super()._run(prompt, max_new_tokens, first)
        self.first_tokens[key] = tokens[0]
        return tokens


class PrefixKv(TorchEagerGenerator):
    """Prefills only the tokens after the longest prefix shared with a prompt seen before (exact replies:
    the KV cache of a prefix does not depend on what follows)."""

    def __init__(self, hf_model: Any, eos_token_id: int) -> None:
        super().__init__(hf_model, eos_token_id)
        self.kv: dict[tuple[int, ...], Any] = {}

    def _start(self, prompt: list[int]) -> tuple[Any, int]:
        """A copy of the KV cache of the longest shared prefix (at most all but the last token), and its
        length; a fresh cache and 0 when nothing is shared."""
        from transformers import DynamicCache

        best, length = None, 0
        for seen, cache in self.kv.items():
            shared = 0
            for a, b in zip(seen, prompt, strict=False):
                if a != b:
                    break
                shared += 1
            if min(shared, len(prompt) - 1) > length:
                best, length = cache, min(shared, len(prompt) - 1)
        if best is None:
            return DynamicCache(config=self.model.config), 0
        cache = copy.deepcopy(best)
        if cache.get_seq_length() > length:
            cache.crop(length - cache.get_seq_length())  # a negative count: tokens removed at the end
        return cache, length

    def _run(self, prompt: Sequence[int], max_new_tokens: int, first: Callable[[int], None]) -> list[int]:
        import torch

        ids = list(prompt)
        with torch.inference_mode():
            cache, done = self._start(ids)
            logits = self.model(input_ids=torch.tensor([ids[done:]]), cache=cache, logits_to_keep=1).logits
            token = int(logits[0, -1].argmax())
            first(token)
            self.kv[tuple(ids)] = cache  # the decode appends to it: a reuse copies and crops it
            tokens = [token]
            while token != self.eos and len(tokens) < max_new_tokens:
                step = self.model(input_ids=torch.tensor([[token]]), cache=cache).logits
                token = int(step[0, -1].argmax())
                tokens.append(token)
        return tokens


class _Planted(TorchEager):
    generator: type[TorchEagerGenerator]

    def prepare(self, model: LlmModel, ctx: GenerationContext) -> Generator:
        honest = super().prepare(model, ctx)
        return self.generator(honest.model, model.eos_token_id)  # type: ignore[attr-defined]


class ReplyCacheStack(_Planted):
    name = "planted-llm-reply-cache"
    generator = ReplyCache


class EarlyTokenStack(_Planted):
    name = "planted-llm-early-token"
    generator = EarlyToken


class PrefixKvStack(_Planted):
    name = "planted-llm-prefix-kv"
    generator = PrefixKv


class NoisyCacheStack(_Planted):
    name = "planted-llm-noisy-cache"
    generator = ReplyCache

    def prepare(self, model: LlmModel, ctx: GenerationContext) -> Generator:
        # a shell in a new session starts the spinner in the background and exits: an orphan
        log = shlex.quote(os.environ.get(SPIN_LOG, ""))
        spin = f"{sys.executable} -c '{SPIN}' {os.getpid()} {log} >/dev/null 2>&1 &"
        subprocess.run(["sh", "-c", spin], start_new_session=True, check=True)
        return super().prepare(model, ctx)
