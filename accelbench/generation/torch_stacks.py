"""PyTorch generating stacks: the fp32 eager reference and a static-cache ``torch.compile`` build.

* ``torch-eager``: transformers' Llama in eager mode, a fresh ``DynamicCache`` per reply, prefill with
  ``logits_to_keep=1``, then one token per ``forward`` and argmax. This is the quality reference.
* ``torch-compiled``: the same model with a ``StaticCache`` sized for the longest prompt plus the cap,
  and the one-token decode step compiled by ``torch.compile`` (inductor, ``dynamic=False``). Prefill runs
  eagerly: a compiled prefill recompiles for every new prompt length (~43 s each for smollm2-135m, see
  docs/llm.md). The cache is allocated once and zeroed (``reset``) before every reply, so no keys or
  values carry over. The compilation (first calls on a warm-up prompt) is timed as ``conversion_s``.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from accelbench.generation.base import GenerationContext, GenerationStack, Generator, cpu_only_reason
from accelbench.generation.models import LlmModel

_WARMUP_PROMPT = (1, 1814, 314, 260, 3575, 30)
_STATIC_CACHE_LEN = 1024
"""Tokens the static cache holds: above the longest prompt (256) plus the cap (16), with room to spare."""


def _torch_missing() -> str | None:
    for module in ("torch", "transformers"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed"
    return None


def _load(model: LlmModel, threads: int) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(threads)
    return AutoModelForCausalLM.from_pretrained(model.folder, dtype=torch.float32).eval()


class _TorchGenerator(Generator):
    """Greedy generation by a transformers model in fp32, stopping at ``eos_token_id``."""

    precision = "fp32"
    weight_format = "fp32 safetensors"

    def __init__(self, hf_model: Any, eos_token_id: int) -> None:
        self.model = hf_model
        self.eos = eos_token_id


class TorchEagerGenerator(_TorchGenerator):
    """Greedy generation with a fresh ``DynamicCache`` per reply."""

    def __init__(self, hf_model: Any, eos_token_id: int) -> None:
        super().__init__(hf_model, eos_token_id)
        self.conversion_s = 0.0
        self.details = {"cache": "DynamicCache", "mode": "eager"}

    def _run(self, prompt: Sequence[int], max_new_tokens: int, first: Callable[[int], None]) -> list[int]:
        return self._greedy(prompt, max_new_tokens, first, self.eos, frozenset())

    def run_on(self, prompt: Sequence[int], max_new_tokens: int, barred: frozenset[int]) -> list[int]:
        """The greedy reply to ``prompt`` that does not stop at EOS: ``max_new_tokens`` long, never
        choosing a token of ``barred`` (the reference of a server made to run on past EOS)."""
        return self._greedy(prompt, max_new_tokens, lambda _: None, None, barred)

    def _greedy(
        self,
        prompt: Sequence[int],
        max_new_tokens: int,
        first: Callable[[int], None],
        stop: int | None,
        barred: frozenset[int],
    ) -> list[int]:
        import torch
        from transformers import DynamicCache

        bar = torch.tensor(sorted(barred), dtype=torch.long)

        def chosen(logits: Any) -> int:
            row = logits[0, -1]
            if len(bar):
                row = row.index_fill(0, bar, float("-inf"))
            return int(row.argmax())

        with torch.inference_mode():
            cache = DynamicCache(config=self.model.config)
            token = chosen(self.model(input_ids=torch.tensor([prompt]), cache=cache, logits_to_keep=1).logits)
            first(token)
            tokens = [token]
            while token != stop and len(tokens) < max_new_tokens:
                token = chosen(self.model(input_ids=torch.tensor([[token]]), cache=cache).logits)
                tokens.append(token)
        return tokens


class _TorchGenerationStack(GenerationStack):
    """transformers + PyTorch on CPU over the fp32 safetensors folder."""

    precision = "fp32"
    weight_format = "fp32 safetensors"

    def unavailable_reason(self, device: str) -> str | None:
        """Needs torch and transformers; CPU only here."""
        return cpu_only_reason(f"{self.name} generation", device) or _torch_missing()

    def versions(self) -> dict[str, str]:
        """torch and transformers versions."""
        import torch
        import transformers

        return {"torch": torch.__version__, "transformers": transformers.__version__}


class TorchEager(_TorchGenerationStack):
    """transformers + PyTorch eager on CPU, fp32, KV cache: the reference."""

    name = "torch-eager"
    layers: ClassVar[Mapping[str, str]] = {"framework": "pytorch", "compiler": "none", "platform": "cpu"}

    def prepare(self, model: LlmModel, ctx: GenerationContext) -> Generator:
        """Load the fp32 folder."""
        return TorchEagerGenerator(_load(model, ctx.threads), model.eos_token_id)


class TorchCompiledGenerator(_TorchGenerator):
    """Greedy generation with a ``StaticCache`` and a compiled one-token decode step."""

    def __init__(self, hf_model: Any, eos_token_id: int) -> None:
        import torch
        from transformers import StaticCache

        super().__init__(hf_model, eos_token_id)
        self.cache = StaticCache(config=hf_model.config, max_cache_len=_STATIC_CACHE_LEN)
        self.step = torch.compile(self._decode, dynamic=False, fullgraph=False)
        self.details = {"cache": f"StaticCache({_STATIC_CACHE_LEN})", "mode": "torch.compile decode"}
        start = time.perf_counter()
        for _ in range(2):  # the first call compiles, the second checks nothing recompiles
            self._run(list(_WARMUP_PROMPT), 4, lambda token: None)
        self.conversion_s = time.perf_counter() - start

    def _decode(self, token: Any, position: Any) -> Any:
        return self.model(input_ids=token, cache=self.cache, cache_position=position).logits

    def _run(self, prompt: Sequence[int], max_new_tokens: int, first: Callable[[int], None]) -> list[int]:
        import torch

        if len(prompt) + max_new_tokens > _STATIC_CACHE_LEN:
            raise ValueError(f"prompt + cap exceeds the static cache of {_STATIC_CACHE_LEN} tokens")
        with torch.inference_mode():
            self.cache.reset()
            positions = torch.arange(len(prompt))
            logits = self.model(
                input_ids=torch.tensor([prompt]), cache=self.cache, cache_position=positions, logits_to_keep=1
            ).logits
            token = int(logits[0, -1].argmax())
            first(token)
            tokens = [token]
            while token != self.eos and len(tokens) < max_new_tokens:
                position = torch.tensor([len(prompt) + len(tokens) - 1])
                token = int(self.step(torch.tensor([[token]]), position)[0, -1].argmax())
                tokens.append(token)
        return tokens


class TorchCompiled(_TorchGenerationStack):
    """transformers + ``torch.compile`` (inductor, which needs a C++ compiler) decode step with a static KV
    cache, fp32."""

    name = "torch-compiled"
    layers: ClassVar[Mapping[str, str]] = {"framework": "pytorch", "compiler": "inductor", "platform": "cpu"}

    def prepare(self, model: LlmModel, ctx: GenerationContext) -> Generator:
        """Load the fp32 folder and compile the decode step (timed as conversion)."""
        import os

        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(ctx.cache_dir / "inductor"))
        return TorchCompiledGenerator(_load(model, ctx.threads), model.eos_token_id)
