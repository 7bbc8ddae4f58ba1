"""OpenVINO GenAI generating stacks: ``LLMPipeline`` on CPU over an exported IR or the shipped GGUF.

* ``openvino-genai``: the fp32 Hugging Face folder exported to OpenVINO IR by optimum-intel
  (``optimum-cli export openvino --task text-generation-with-past --weight-format fp32``), once per
  model, into ``<cache_dir>/llm/<model>-openvino-fp32/``; the export is ``conversion_s``. optimum-intel
  requires ``transformers<5.6``, so it runs from its own venv (``accelbench.generation.exporter``).
  The pipeline is told ``INFERENCE_PRECISION_HINT=f32``: this CPU's default is bf16 (AVX512_BF16).
* ``openvino-genai-gguf``: ``LLMPipeline`` reading smollm2's shipped Q4_1 GGUF directly (no export);
  tiny-llama gets the same layout quantized by gguf-py.

Every pipeline is the stateful one (``ATTENTION_BACKEND="SDPA"``), whose state is reset at each
``generate`` call: the default paged-attention pipeline reuses the KV prefix across calls, which gave
a fake 15-31 ms time to first token for a repeated prompt (docs/llm.md), and it streams tokens from its
own thread. A ``StreamerBase`` subclass sees each token id as it is decoded, in the generation loop:
the first one fires the first-token callback.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from accelbench.generation import exporter
from accelbench.generation.base import (
    FileGenerator,
    GenerationContext,
    GenerationStack,
    Generator,
    cpu_only_reason,
)
from accelbench.generation.gguf_writer import shipped_or_q4_1_gguf
from accelbench.generation.models import LlmModel


def _streamer(ovg: Any, tokens: list[int], first: Callable[[int], None]) -> Any:
    """A streamer that collects token ids and reports the first."""

    class _Collect(ovg.StreamerBase):
        def write(self, token: Any) -> Any:
            new = [int(t) for t in token] if isinstance(token, list | tuple) else [int(token)]
            for value in new:
                tokens.append(value)
                if len(tokens) == 1:
                    first(value)
            return ovg.StreamingStatus.RUNNING

        def end(self) -> None:
            """Nothing to flush."""

    return _Collect()


class OpenvinoGenaiGenerator(FileGenerator):
    """Greedy ``LLMPipeline.generate`` on token ids, one call per reply."""

    def __init__(self, path: Path, model: LlmModel, threads: int, precision: str, weight_format: str) -> None:
        import openvino_genai as ovg

        properties = {"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": "f32"}
        self.ovg = ovg
        self.pipe = ovg.LLMPipeline(str(path), "CPU", ATTENTION_BACKEND="SDPA", **properties)
        super().__init__(path, model, threads, precision, weight_format, attention_backend="SDPA")

    def _run(self, prompt: Sequence[int], max_new_tokens: int, first: Callable[[int], None]) -> list[int]:
        import numpy as np
        import openvino as ov

        config = self.ovg.GenerationConfig()
        config.max_new_tokens = max_new_tokens
        config.do_sample = False
        config.eos_token_id = self.eos
        ids = np.array([prompt], dtype=np.int64)
        inputs = self.ovg.TokenizedInputs(ov.Tensor(ids), ov.Tensor(np.ones_like(ids)))
        tokens: list[int] = []
        result = self.pipe.generate(inputs, config, streamer=_streamer(self.ovg, tokens, first))
        returned = [int(t) for t in result.tokens[0]]
        if returned[: len(tokens)] != tokens[: len(returned)]:
            raise RuntimeError("OpenVINO GenAI streamed other tokens than it returned")
        return returned


def _missing() -> str | None:
    for module in ("openvino", "openvino_genai", "openvino_tokenizers"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (the llm extra has it)"
    return None


class OpenvinoGenai(GenerationStack):
    """OpenVINO GenAI on CPU over an fp32 IR exported by optimum-intel, f32 inference hint."""

    name = "openvino-genai"
    precision = "fp32"
    weight_format = "fp32 OpenVINO IR"
    layers: ClassVar[Mapping[str, str]] = {"framework": "openvino", "compiler": "openvino", "platform": "cpu"}

    def unavailable_reason(self, device: str) -> str | None:
        """Needs the openvino trio here and an optimum-intel exporter venv."""
        return cpu_only_reason(self.name, device) or _missing() or exporter.missing_reason()

    def versions(self) -> dict[str, str]:
        """openvino and openvino-genai versions."""
        import openvino
        import openvino_genai

        return {"openvino": openvino.__version__, "openvino-genai": openvino_genai.__version__}

    def prepare(self, model: LlmModel, ctx: GenerationContext) -> Generator:
        """Export the IR (or reuse it) and build the pipeline."""
        exported = exporter.exported_folder(model, "fp32", ctx.cache_dir)
        return self.file_generator(OpenvinoGenaiGenerator, exported, model, ctx)


class OpenvinoGenaiGguf(OpenvinoGenai):
    """OpenVINO GenAI on CPU reading the shipped Q4_1 GGUF (smollm2-135m only): no export step."""

    name = "openvino-genai-gguf"
    precision = "int4"
    weight_format = "GGUF Q4_1 (Q8_0 embedding)"

    def unavailable_reason(self, device: str) -> str | None:
        """Needs the openvino trio only."""
        return cpu_only_reason(self.name, device) or _missing()

    def prepare(self, model: LlmModel, ctx: GenerationContext) -> Generator:
        """Open the GGUF file directly (for a model that ships none, one quantized by gguf-py: OpenVINO
        cannot read an F32 GGUF)."""
        gguf = shipped_or_q4_1_gguf(model, ctx.cache_dir)
        return self.file_generator(OpenvinoGenaiGenerator, gguf, model, ctx)
