"""onnxruntime-genai generating stacks: the model builder's ONNX model, greedy search on CPU.

The builder (``python -m onnxruntime_genai.models.builder``, run in a child process, offline) turns the
fp32 Hugging Face folder into ``model.onnx`` + ``genai_config.json`` once per model and precision, in
``<cache_dir>/llm/<model>-ort-genai-<precision>/``; its time is ``conversion_s``. ``int4`` is the
builder's RTN int4 (block 32) with int8 activations (``accuracy_level`` 4, its CPU default): the weights
are re-quantized from the dequantized Q4_1 ones, so its replies diverge early (docs/llm.md).

Each reply gets a new ``og.Generator`` (its own KV cache); EOS ends the search and is the last token.
Intra-op threads are set in the session options (``intra_op_num_threads``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from accelbench.errors import Unsupported
from accelbench.generation.base import GenerationContext, GenerationStack, Generator, cpu_only_reason
from accelbench.generation.models import LlmModel

_BUILD_TIMEOUT_S = 1800
_DONE_MARK = "accelbench-complete"


def built_folder(model: LlmModel, precision: str, cache_dir: Path) -> tuple[Path, float]:
    """The builder's output folder for ``model`` at ``precision``, built if needed; (folder, build_s)."""
    out = cache_dir / "llm" / f"{model.name}-ort-genai-{precision}"
    if (out / _DONE_MARK).exists():
        return out, 0.0
    command = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(model.folder)]
    command += ["-o", str(out), "-p", precision, "-e", "cpu", "-c", str(out.with_suffix(".hf-cache"))]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=_BUILD_TIMEOUT_S)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise Unsupported(f"onnxruntime-genai builder failed ({precision}): {tail[0]}")
    (out / _DONE_MARK).write_text("ok\n")
    return out, time.perf_counter() - start


class OrtGenaiGenerator(Generator):
    """Greedy search with ``og.Generator``, one per reply."""

    def __init__(self, folder: Path, precision: str, threads: int, conversion_s: float) -> None:
        import onnxruntime_genai as og

        config = og.Config(str(folder))
        options = {"intra_op_num_threads": threads, "inter_op_num_threads": 1}
        config.overlay(json.dumps({"model": {"decoder": {"session_options": options}}}))
        self.og = og
        self.model = og.Model(config)
        self.precision = precision
        self.weight_format = f"{'fp32' if precision == 'fp32' else 'int4 RTN block 32'} ONNX"
        self.conversion_s = conversion_s
        self.details = {"folder": folder.name, "threads": str(threads)}

    def _run(self, prompt: Sequence[int], max_new_tokens: int, first: Callable[[int], None]) -> list[int]:
        params = self.og.GeneratorParams(self.model)
        params.set_search_options(do_sample=False, max_length=len(prompt) + max_new_tokens)
        generator: Any = self.og.Generator(self.model, params)
        generator.append_tokens(list(prompt))
        tokens: list[int] = []
        while not generator.is_done() and len(tokens) < max_new_tokens:
            generator.generate_next_token()
            tokens.append(int(generator.get_next_tokens()[0]))
            if len(tokens) == 1:
                first(tokens[0])
        return tokens


class OrtGenai(GenerationStack):
    """onnxruntime-genai on CPU, fp32 weights and compute."""

    name = "ort-genai"
    precision = "fp32"
    weight_format = "fp32 ONNX"
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "onnx",
        "compiler": "onnxruntime-genai",
        "platform": "cpu",
    }

    def unavailable_reason(self, device: str) -> str | None:
        """Needs onnxruntime-genai, and onnx + onnx_ir for its builder."""
        if reason := cpu_only_reason(self.name, device):
            return reason
        for module in ("onnxruntime_genai", "onnx", "onnx_ir", "transformers"):
            if importlib.util.find_spec(module) is None:
                return f"{module} is not installed (the llm extra has it)"
        return None

    def versions(self) -> dict[str, str]:
        """onnxruntime-genai and onnxruntime versions."""
        import onnxruntime
        import onnxruntime_genai

        return {"onnxruntime-genai": onnxruntime_genai.__version__, "onnxruntime": onnxruntime.__version__}

    def prepare(self, model: LlmModel, ctx: GenerationContext) -> Generator:
        """Build (or reuse) the ONNX model and open it."""
        folder, build_s = built_folder(model, self.precision, ctx.cache_dir)
        return OrtGenaiGenerator(folder, self.precision, ctx.threads, build_s)


class OrtGenaiInt4(OrtGenai):
    """onnxruntime-genai on CPU, int4 weights (RTN, block 32), int8 activations."""

    name = "ort-genai-int4"
    precision = "int4"
    weight_format = "int4 RTN block 32 ONNX"
