"""The ``bert-base`` workload: a randomly initialised BERT encoder, mean-pooled to one embedding.

``standard`` is BERT-base (hidden 768, 12 layers, 12 heads, ffn 3072, vocab 30522) at sequence length
128; ``tiny`` is hidden 64, 2 layers, 2 heads, ffn 128, vocab 1000 at sequence length 16. There is no
pooler; the model output is the masked mean of the last hidden state, ``[1, hidden]``. Attention is the
"eager" implementation, the one that ONNX export and every compiler handle.

Variants (``draw_changes``) mutate two or three of: the head dimension (hidden = heads x head dim, off
multiples of 8), the head count, the ffn width, the depth (+-1 layer), the sequence length and the
activation (ReLU, SiLU, tanh-GELU).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch
from transformers import BertConfig, BertModel

from accelbench.workloads._text import PooledBert, check_size, random_tokens
from accelbench.workloads.base import SIZES, Changes, Inputs, Mutation, Variant, Workload
from accelbench.workloads.mutations import depth_step, kinds_to_apply, off_power_of_two, other_than


@dataclass(frozen=True, slots=True)
class BertShape:
    """The dimensions of one BERT size."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    seq_len: int
    max_positions: int
    activation: str = "gelu"
    """``BertConfig.hidden_act``."""


SHAPES = {
    "tiny": BertShape(hidden=64, layers=2, heads=2, ffn=128, vocab=1000, seq_len=16, max_positions=64),
    "standard": BertShape(
        hidden=768, layers=12, heads=12, ffn=3072, vocab=30522, seq_len=128, max_positions=512
    ),
}

_SAMPLE_STREAM = 0xBE27
"""Tag that keeps this workload's sample streams apart from other workloads'."""
ACTIVATIONS = ("gelu", "relu", "silu", "gelu_new")
VARIANT_KINDS = ("head_dim", "heads", "ffn", "depth", "sequence", "activation")


def bert_shape(size: str, variant: Variant | None = None) -> BertShape:
    """The shape at ``size`` with ``variant``'s changes applied (``UserError`` for an unknown size)."""
    check_size(size, "bert-base")
    if variant is None:
        return SHAPES[size]
    return dataclasses.replace(SHAPES[size], **variant.changes)


def draw_bert_changes(shape: BertShape, rng: np.random.Generator) -> Changes:
    """Two or three mutations of ``shape`` (see ``VARIANT_KINDS``), with their descriptions."""
    changes: dict[str, object] = {}
    mutations = []
    heads, head_dim = shape.heads, shape.hidden // shape.heads
    for kind in kinds_to_apply(rng, VARIANT_KINDS):
        if kind == "head_dim":
            head_dim = off_power_of_two(rng, head_dim, low=4)
            mutations.append(Mutation(kind, f"head dim {shape.hidden // shape.heads} -> {head_dim}"))
        elif kind == "heads":
            heads = depth_step(rng, heads)
            head_dim = (
                max(4, round(shape.hidden / heads)) if head_dim == shape.hidden // shape.heads else head_dim
            )
            mutations.append(Mutation(kind, f"heads {shape.heads} -> {heads}"))
        elif kind == "ffn":
            changes["ffn"] = off_power_of_two(rng, shape.ffn, low=8)
            mutations.append(Mutation("width", f"ffn {shape.ffn} -> {changes['ffn']}"))
        elif kind == "depth":
            changes["layers"] = depth_step(rng, shape.layers)
            mutations.append(Mutation(kind, f"layers {shape.layers} -> {changes['layers']}"))
        elif kind == "sequence":
            changes["seq_len"] = off_power_of_two(rng, shape.seq_len, low=8, high=shape.max_positions)
            mutations.append(Mutation(kind, f"sequence {shape.seq_len} -> {changes['seq_len']} tokens"))
        else:
            changes["activation"] = other_than(rng, ACTIVATIONS, shape.activation)
            mutations.append(Mutation(kind, f"{shape.activation} -> {changes['activation']}"))
    if heads != shape.heads:
        changes["heads"] = heads
    if heads * head_dim != shape.hidden:
        changes["hidden"] = heads * head_dim
        mutations.append(Mutation("width", f"hidden {shape.hidden} -> {heads * head_dim}"))
    return changes, mutations


def bert_config(shape: BertShape) -> BertConfig:
    """The ``BertConfig`` of ``shape``, eager attention."""
    config = BertConfig(
        vocab_size=shape.vocab,
        hidden_size=shape.hidden,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        intermediate_size=shape.ffn,
        max_position_embeddings=shape.max_positions,
        hidden_act=shape.activation,
    )
    config._attn_implementation = "eager"
    return config


class BertBase(Workload):
    """BERT with seeded random weights; output is the masked mean-pooled last hidden state."""

    name = "bert-base"
    task = "text-embedding"
    quality_metric = "cosine"
    performance_sample_count = 10833  # MLPerf's BERT (SQuAD v1.1 dev set features)

    def input_names(self) -> tuple[str, ...]:
        """``input_ids`` and ``attention_mask``, both int64 ``[1, seq_len]``."""
        return ("input_ids", "attention_mask")

    def build_model(self, size: str, seed: int, variant: Variant | None = None) -> torch.nn.Module:
        """BERT at ``size`` with weights drawn from ``seed`` (global RNG state left untouched)."""
        shape = bert_shape(size, variant)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            bert = BertModel(bert_config(shape), add_pooling_layer=False)
        return PooledBert(bert).eval()

    def architecture(self, size: str, variant: Variant | None = None) -> torch.nn.Module:
        """The encoder with transformers' default initialisation."""
        return PooledBert(BertModel(bert_config(bert_shape(size, variant)), add_pooling_layer=False)).eval()

    def draw_changes(self, size: str, rng: np.random.Generator) -> Changes:
        """Two or three mutations among head dim, heads, ffn, depth, sequence length and activation."""
        return draw_bert_changes(bert_shape(size), rng)

    def make_sample(self, size: str, seed: int, index: int, variant: Variant | None = None) -> Inputs:
        """Seeded token ids ([CLS] ... [SEP], then padding) and the matching attention mask."""
        shape = bert_shape(size, variant)
        rng = np.random.default_rng([_SAMPLE_STREAM, SIZES.index(size), seed, index])
        return random_tokens(rng, shape.seq_len, shape.vocab)

    def describe(self, size: str) -> dict[str, str]:
        """Shape facts of the encoder at ``size``."""
        check_size(size, self.name)
        shape = SHAPES[size]
        return {
            "architecture": "BERT encoder (transformers.BertModel, eager attention, no pooler)",
            "shape": f"hidden {shape.hidden}, {shape.layers} layers, {shape.heads} heads, ffn {shape.ffn}",
            "vocab": str(shape.vocab),
            "sequence": f"{shape.seq_len} tokens, seeded real length, padding masked",
            "output": f"masked mean of last_hidden_state, [1, {shape.hidden}]",
            "weights": "random, seeded by the run seed",
        }
