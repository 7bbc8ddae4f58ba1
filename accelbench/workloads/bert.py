"""The ``bert-base`` workload: a randomly initialised BERT encoder, mean-pooled to one embedding.

``standard`` is BERT-base (hidden 768, 12 layers, 12 heads, ffn 3072, vocab 30522) at sequence length
128; ``tiny`` is hidden 64, 2 layers, 2 heads, ffn 128, vocab 1000 at sequence length 16. There is no
pooler; the model output is the masked mean of the last hidden state, ``[1, hidden]``. Attention is the
"eager" implementation, the one that ONNX export and every compiler handle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from transformers import BertConfig, BertModel

from accelbench.workloads._text import PooledBert, check_size, random_tokens
from accelbench.workloads.base import SIZES, Inputs, Workload


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


SHAPES = {
    "tiny": BertShape(hidden=64, layers=2, heads=2, ffn=128, vocab=1000, seq_len=16, max_positions=64),
    "standard": BertShape(
        hidden=768, layers=12, heads=12, ffn=3072, vocab=30522, seq_len=128, max_positions=512
    ),
}

_SAMPLE_STREAM = 0xBE27
"""Tag that keeps this workload's sample streams apart from other workloads'."""


def bert_config(shape: BertShape) -> BertConfig:
    """The ``BertConfig`` of ``shape``, eager attention."""
    config = BertConfig(
        vocab_size=shape.vocab,
        hidden_size=shape.hidden,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        intermediate_size=shape.ffn,
        max_position_embeddings=shape.max_positions,
    )
    config._attn_implementation = "eager"
    return config


class BertBase(Workload):
    """BERT with seeded random weights; output is the masked mean-pooled last hidden state."""

    name = "bert-base"
    task = "text-embedding"
    quality_metric = "cosine"

    def input_names(self) -> tuple[str, ...]:
        """``input_ids`` and ``attention_mask``, both int64 ``[1, seq_len]``."""
        return ("input_ids", "attention_mask")

    def build_model(self, size: str, seed: int) -> torch.nn.Module:
        """BERT at ``size`` with weights drawn from ``seed`` (global RNG state left untouched)."""
        check_size(size, self.name)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            bert = BertModel(bert_config(SHAPES[size]), add_pooling_layer=False)
        return PooledBert(bert).eval()

    def make_sample(self, size: str, seed: int, index: int) -> Inputs:
        """Seeded token ids ([CLS] ... [SEP], then padding) and the matching attention mask."""
        check_size(size, self.name)
        shape = SHAPES[size]
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
