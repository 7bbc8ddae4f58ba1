"""Write an fp32 Hugging Face Llama folder as an F32 GGUF file that llama.cpp loads.

llama.cpp's own ``convert_hf_to_gguf.py`` ships only in the llama-cpp-python sdist, so this module does
the part the decode workload needs with the ``gguf`` package: the ``llama`` architecture keys, the
tensors under llama.cpp's names (``blk.N.attn_q.weight`` ...), with the Q and K projections permuted
from Hugging Face's rotate-half RoPE layout to llama.cpp's interleaved one (as ``convert_hf_to_gguf``
does), the embedding tied with the output, and the tokenizer keys copied verbatim from smollm2's
shipped GGUF (both models use SmolLM2's tokenizer). Written once into
``<cache_dir>/llm/<model>.f32.gguf``, or, for a model that ships no GGUF (tiny-llama), quantized like
smollm2's file by gguf-py into ``<model>.q4_1.gguf`` so the GGUF-reading stacks run it too.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from accelbench.generation.models import LlmModel, smollm2_gguf

_LAYER_TENSORS = {
    "input_layernorm": "attn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "post_attention_layernorm": "ffn_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


def f32_gguf(model: LlmModel, cache_dir: Path) -> tuple[Path, float]:
    """The F32 GGUF of ``model``, written if needed; (path, write_s)."""
    return _cached(model, cache_dir, quantized=False)


def q4_1_gguf(model: LlmModel, cache_dir: Path) -> tuple[Path, float]:
    """A GGUF of ``model`` laid out like smollm2's shipped one (layer matrices Q4_1, embedding Q8_0,
    norms F32), quantized by gguf-py from the fp32 folder; for models that ship no GGUF (tiny-llama)."""
    return _cached(model, cache_dir, quantized=True)


def shipped_or_q4_1_gguf(model: LlmModel, cache_dir: Path) -> tuple[Path, float]:
    """The model's shipped Q4_1 GGUF (nothing written: 0 s), or, for a model that ships none, ``q4_1_gguf``'s;
    (path, write_s)."""
    return (model.gguf_path, 0.0) if model.gguf_path else q4_1_gguf(model, cache_dir)


def _cached(model: LlmModel, cache_dir: Path, quantized: bool) -> tuple[Path, float]:
    path = cache_dir / "llm" / f"{model.name}.{'q4_1' if quantized else 'f32'}.gguf"
    if path.exists():
        return path, 0.0
    start = time.perf_counter()
    partial = path.with_suffix(".partial")
    _write(model, partial, quantized)
    partial.rename(path)
    return path, time.perf_counter() - start


def permute_for_rope(weight: np.ndarray, heads: int) -> np.ndarray:
    """Reorder the rows of a Q/K projection from rotate-half pairs (i, i + d/2) to adjacent pairs."""
    rows = weight.shape[0]
    return (
        weight.reshape(heads, 2, rows // heads // 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)
    )


def _write(model: LlmModel, path: Path, quantized: bool) -> None:
    import gguf
    from safetensors.numpy import load_file
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(model.folder)
    weights = load_file(str(model.folder / "model.safetensors"))
    writer = gguf.GGUFWriter(str(path), "llama")
    _architecture(writer, config, model.name, file_type=3 if quantized else 0)  # MOSTLY_Q4_1 / ALL_F32
    _copy_tokenizer(writer, gguf.GGUFReader(str(smollm2_gguf())))
    for name, array in _tensors(weights, config):
        data = np.ascontiguousarray(array, dtype=np.float32)
        qtype = _quant_type(name, data) if quantized else None
        if qtype is None:
            writer.add_tensor(name, data)
        else:
            writer.add_tensor(name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _quant_type(name: str, data: np.ndarray) -> Any:
    """Q8_0 for the embedding, Q4_1 for the other matrices, None (F32) for norms, as smollm2's file."""
    import gguf

    if data.ndim < 2:
        return None
    if name == "token_embd.weight":
        return gguf.GGMLQuantizationType.Q8_0
    return gguf.GGMLQuantizationType.Q4_1


def _architecture(writer: Any, config: Any, name: str, file_type: int) -> None:
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    rope = getattr(config, "rope_parameters", None) or {}
    writer.add_name(name)
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(float(rope.get("rope_theta", getattr(config, "rope_theta", 10000.0))))
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_vocab_size(config.vocab_size)
    writer.add_file_type(file_type)


def _copy_tokenizer(writer: Any, reader: Any) -> None:
    import gguf

    for field_name, field in reader.fields.items():
        if not field_name.startswith("tokenizer."):
            continue
        kind = field.types[0]
        if kind == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(field_name, field.contents(), kind, sub_type=field.types[-1])
        else:
            writer.add_key_value(field_name, field.contents(), kind)


def _tensors(weights: dict[str, np.ndarray], config: Any) -> list[tuple[str, np.ndarray]]:
    out = [("token_embd.weight", weights["model.embed_tokens.weight"])]
    out.append(("output_norm.weight", weights["model.norm.weight"]))
    if "lm_head.weight" in weights and not getattr(config, "tie_word_embeddings", True):
        out.append(("output.weight", weights["lm_head.weight"]))
    for layer in range(config.num_hidden_layers):
        for hf_name, gguf_name in _LAYER_TENSORS.items():
            array = weights[f"model.layers.{layer}.{hf_name}.weight"]
            if hf_name == "self_attn.q_proj":
                array = permute_for_rope(array, config.num_attention_heads)
            elif hf_name == "self_attn.k_proj":
                array = permute_for_rope(array, config.num_key_value_heads)
            out.append((f"blk.{layer}.{gguf_name}.weight", array))
    return out
