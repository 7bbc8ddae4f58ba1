"""llama.cpp generating stacks through llama-cpp-python, on CPU.

* ``llama-cpp``: smollm2's shipped GGUF as is (Q4_1 layer matrices, Q8_0 embedding; llama.cpp's Q4_1
  kernels quantize activations to 8 bit, so the compute is int4 x int8, precision class ``int4``); a
  model that ships none (tiny-llama) gets the same layout quantized by gguf-py (``q4_1_gguf``).
* ``llama-cpp-f32``: an F32 GGUF written from the fp32 folder (``accelbench.generation.gguf_writer``,
  timed as ``conversion_s``): the exactness check of llama.cpp against torch.

llama-cpp-python has no binary wheel: pip builds it from source (12 minutes on 2 cores, docs/llm.md),
so it is not in the ``llm`` extra; the stacks are unavailable without it. ``n_threads_batch`` (prefill)
is set with ``n_threads``: its default is every core, and on a loaded 2-core machine 2 threads stall.
``Llama.generate`` reuses the longest KV prefix of the previous call (a fake 18 ms TTFT for a repeated
prompt), so ``reset()`` runs before every reply. It never stops at EOS by itself: the loop does.
Weight repacking is off (``_without_weight_repacking``): with it the Q4_1 model segfaults here.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from accelbench.generation.base import (
    FileGenerator,
    GenerationContext,
    GenerationStack,
    Generator,
    cpu_only_reason,
)
from accelbench.generation.gguf_writer import f32_gguf, shipped_or_q4_1_gguf
from accelbench.generation.models import LlmModel

_CONTEXT_TOKENS = 1024


@contextlib.contextmanager
def _without_weight_repacking() -> Iterator[None]:
    """Build ``Llama`` with ``use_extra_bufts = False``: llama.cpp's CPU weight repacking (the "extra
    buffer types" that re-lay Q4_1/Q8_0 weights for AVX-512 kernels) segfaults in the first decode of the
    Q4_1 model with llama-cpp-python 0.3.36 built here. ``Llama`` exposes no argument for it, so its
    default-params function is wrapped while the model loads."""
    import llama_cpp.llama as high_level

    low_level = high_level.llama_cpp
    original = low_level.llama_model_default_params

    def defaults() -> Any:
        params = original()
        params.use_extra_bufts = False
        return params

    low_level.llama_model_default_params = defaults
    try:
        yield
    finally:
        low_level.llama_model_default_params = original


class LlamaCppGenerator(FileGenerator):
    """Greedy ``Llama.generate`` after ``reset()``, one token at a time."""

    def __init__(self, path: Path, model: LlmModel, threads: int, precision: str, weight_format: str) -> None:
        from llama_cpp import Llama

        with _without_weight_repacking():
            self.llm: Any = Llama(
                model_path=str(path),
                n_threads=threads,
                n_threads_batch=threads,
                n_ctx=_CONTEXT_TOKENS,
                verbose=False,
            )
        super().__init__(path, model, threads, precision, weight_format, extra_bufts="off")

    def _run(self, prompt: Sequence[int], max_new_tokens: int, first: Callable[[int], None]) -> list[int]:
        self.llm.reset()
        tokens: list[int] = []
        greedy = {"temp": 0.0, "top_k": 1, "top_p": 1.0, "min_p": 0.0, "repeat_penalty": 1.0}
        for token in self.llm.generate(list(prompt), reset=True, **greedy):
            tokens.append(int(token))
            if len(tokens) == 1:
                first(tokens[0])
            if token == self.eos or len(tokens) >= max_new_tokens:
                break
        return tokens


class LlamaCpp(GenerationStack):
    """llama.cpp (llama-cpp-python) on CPU over smollm2's shipped Q4_1 GGUF."""

    name = "llama-cpp"
    precision = "int4"
    weight_format = "GGUF Q4_1 (Q8_0 embedding)"
    layers: ClassVar[Mapping[str, str]] = {"framework": "ggml", "compiler": "llama.cpp", "platform": "cpu"}

    def unavailable_reason(self, device: str) -> str | None:
        """Needs llama-cpp-python (a source build, not in the llm extra)."""
        if reason := cpu_only_reason(self.name, device):
            return reason
        if importlib.util.find_spec("llama_cpp") is None:
            return "llama-cpp-python is not installed (source build only, ~12 min on 2 cores: docs/llm.md)"
        return None

    def versions(self) -> dict[str, str]:
        """llama-cpp-python version."""
        import llama_cpp

        return {"llama-cpp-python": llama_cpp.__version__}

    def prepare(self, model: LlmModel, ctx: GenerationContext) -> Generator:
        """Open the shipped GGUF (or, for a model that ships none, one quantized by gguf-py)."""
        return self.file_generator(LlamaCppGenerator, shipped_or_q4_1_gguf(model, ctx.cache_dir), model, ctx)


class LlamaCppF32(LlamaCpp):
    """llama.cpp on CPU over an F32 GGUF written from the fp32 folder."""

    name = "llama-cpp-f32"
    precision = "fp32"
    weight_format = "GGUF F32"

    def prepare(self, model: LlmModel, ctx: GenerationContext) -> Generator:
        """Write (or reuse) the F32 GGUF and open it."""
        return self.file_generator(LlamaCppGenerator, f32_gguf(model, ctx.cache_dir), model, ctx)
