"""Tiny models and inputs shared by the end-to-end stack tests, independent of the real workloads.

Only add to this file: several test modules import it.
"""

from __future__ import annotations

import numpy as np
import torch
from transformers import BertConfig, BertModel

from accelbench.stacks.base import ModelSpec

MAX_NORMALISED_ERROR = 1e-5
"""``max|out - ref| / max|ref|`` an fp32 stack must stay under against torch eager fp32."""


class TinyConvNet(torch.nn.Module):
    """Conv2d + BatchNorm + ReLU + pooling + Linear on a 1x3x16x16 image."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.norm = torch.nn.BatchNorm2d(8)
        self.pool = torch.nn.AdaptiveAvgPool2d(2)
        self.head = torch.nn.Linear(8 * 2 * 2, 10)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        features = self.pool(torch.relu(self.norm(self.conv(image))))
        return self.head(features.flatten(1))


class TinyBert(torch.nn.Module):
    """A one-layer BERT whose output is the mean of the last hidden state."""

    def __init__(self) -> None:
        super().__init__()
        config = BertConfig(
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=64,
            vocab_size=100,
            attn_implementation="eager",
        )
        self.bert = BertModel(config, add_pooling_layer=False)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return hidden.mean(dim=1)


class TinyMlp(torch.nn.Module):
    """Linear -> GELU -> LayerNorm -> Linear on a [1, 4, 16] sequence (no attention, no convolution)."""

    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Linear(16, 32)
        self.norm = torch.nn.LayerNorm(32)
        self.down = torch.nn.Linear(32, 8)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.down(self.norm(torch.nn.functional.gelu(self.up(tokens))))


def conv_case() -> tuple[torch.nn.Module, ModelSpec]:
    """The tiny conv net (non-trivial BatchNorm statistics) and one image."""
    torch.manual_seed(0)
    model = TinyConvNet()
    with torch.no_grad():  # non-trivial BatchNorm statistics, so folding it is actually tested
        model.norm.running_mean.uniform_(-0.5, 0.5)
        model.norm.running_var.uniform_(0.5, 2.0)
    image = np.random.default_rng(0).standard_normal((1, 3, 16, 16), dtype=np.float32)
    return model.eval(), ModelSpec("tinyconv", "tiny", 0, "canonical", ("image",), (image,))


def bert_case() -> tuple[torch.nn.Module, ModelSpec]:
    """The tiny BERT and one padded sequence of 8 tokens."""
    torch.manual_seed(0)
    ids = np.random.default_rng(0).integers(1, 100, size=(1, 8), dtype=np.int64)
    mask = np.array([[1, 1, 1, 1, 1, 1, 0, 0]], dtype=np.int64)
    spec = ModelSpec("tinybert", "tiny", 0, "canonical", ("input_ids", "attention_mask"), (ids, mask))
    return TinyBert().eval(), spec


def mlp_case() -> tuple[torch.nn.Module, ModelSpec]:
    """The tiny MLP (non-trivial LayerNorm affine) and one [1, 4, 16] input."""
    torch.manual_seed(0)
    model = TinyMlp()
    with torch.no_grad():
        model.norm.weight.uniform_(0.5, 1.5)
        model.norm.bias.uniform_(-0.5, 0.5)
    tokens = np.random.default_rng(0).standard_normal((1, 4, 16), dtype=np.float32)
    return model.eval(), ModelSpec("tinymlp", "tiny", 0, "canonical", ("tokens",), (tokens,))


def other_sample(spec: ModelSpec) -> ModelSpec:
    """The same spec with different inputs, so a stack that replays the example output is caught."""
    rng = np.random.default_rng(1)
    inputs = tuple(
        rng.integers(1, 100, size=array.shape, dtype=np.int64)
        if array.dtype == np.int64
        else rng.standard_normal(array.shape, dtype=np.float32)
        for array in spec.example
    )
    if spec.input_names == ("input_ids", "attention_mask"):
        inputs = (inputs[0], np.ones_like(spec.example[1]))
    return ModelSpec(spec.workload, spec.size, spec.seed, spec.variant, spec.input_names, inputs)


def reference(model: torch.nn.Module, spec: ModelSpec) -> np.ndarray:
    """Torch eager fp32 output of ``model`` on ``spec.example``."""
    with torch.no_grad():
        return model(*(torch.from_numpy(array) for array in spec.example)).numpy()


def normalised_error(output: np.ndarray, expected: np.ndarray) -> float:
    """``max|output - expected| / max|expected|``; shapes must match."""
    assert output.shape == expected.shape, (output.shape, expected.shape)
    return float(np.max(np.abs(output - expected)) / np.max(np.abs(expected)))


CASES = {"conv": conv_case, "bert": bert_case, "mlp": mlp_case}
"""The three tiny models by name."""
