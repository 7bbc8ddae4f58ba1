"""Workload cost: hand-counted FLOPs and bytes of single layers, determinism, the cache, the real models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

from accelbench import registry
from accelbench.errors import UserError
from accelbench.variants.cost import workload_cost
from accelbench.workloads import flops
from accelbench.workloads.flops import WorkloadCost, model_cost


def test_linear_counts_two_flops_per_multiply_add_and_its_bytes() -> None:
    layer = nn.Linear(64, 32)
    cost = model_cost(layer, (torch.ones(10, 64),))
    assert cost.flops == 2 * 10 * 64 * 32
    assert cost.state_bytes == (64 * 32 + 32) * 4  # weight and bias, read once
    assert cost.activation_bytes == (10 * 64 + 10 * 32) * 4  # input read, output written
    assert cost.bytes_moved == cost.state_bytes + cost.activation_bytes
    assert cost.arithmetic_intensity == pytest.approx(cost.flops / cost.bytes_moved)


def test_reshapes_move_no_bytes() -> None:
    flat = model_cost(nn.Linear(64, 32), (torch.ones(10, 64),))
    batched = model_cost(nn.Linear(64, 32), (torch.ones(1, 10, 64),))
    assert (batched.flops, batched.bytes_moved) == (flat.flops, flat.bytes_moved)


def test_conv2d_counts_output_elements_times_kernel_volume() -> None:
    conv = nn.Conv2d(3, 8, kernel_size=3, padding=1, bias=False)
    cost = model_cost(conv, (torch.ones(1, 3, 16, 16),))
    assert cost.flops == 2 * (8 * 16 * 16) * (3 * 3 * 3)
    assert cost.state_bytes == 8 * 3 * 3 * 3 * 4
    assert cost.activation_bytes == (3 * 16 * 16 + 8 * 16 * 16) * 4


def test_embedding_tables_count_only_the_gathered_rows() -> None:
    table = nn.Embedding(1000, 16)
    cost = model_cost(table, (torch.tensor([[1, 2, 3]]),))
    assert cost.flops == 0
    assert cost.state_bytes == 3 * 16 * 4
    assert cost.activation_bytes == 3 * 8 + 3 * 16 * 4  # int64 ids read, rows written


@pytest.mark.parametrize("name", ["resnet50", "bert-base", "minilm-l6"])
def test_tiny_costs_are_positive_and_deterministic(name: str) -> None:
    first, second = workload_cost(name, "tiny"), workload_cost(name, "tiny", seed=1)
    assert first.flops > 0 and first.bytes_moved > 0 and first.arithmetic_intensity > 0
    assert (first.flops, first.bytes_moved) == (second.flops, second.bytes_moved)
    assert first.workload == name and first.size == "tiny" and "FlopCounterMode" in first.method


def test_costs_are_cached_per_workload_and_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counted = workload_cost("resnet50", "tiny", cache_dir=tmp_path)
    document = json.loads((tmp_path / flops.COST_CACHE_FILE).read_text())
    assert list(document["costs"]) == ["resnet50/tiny"]

    def no_build(reference: str) -> None:
        raise AssertionError("the cache was not used")

    monkeypatch.setattr(registry, "instantiate", no_build)
    assert workload_cost("resnet50", "tiny", cache_dir=tmp_path) == counted


def test_cost_round_trip_and_unknown_workload() -> None:
    cost = WorkloadCost("w", "tiny", 10, 5, 2.0, "hand", 3, 2, {"aten.mm": 10})
    assert WorkloadCost.from_dict(json.loads(json.dumps(cost.to_dict()))) == cost
    with pytest.raises(UserError, match="unknown workload"):
        workload_cost("no-such-model", "tiny")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "expected_flops"),
    [
        ("resnet50", 8.2e9),  # 4.1 G multiply-adds (ResNet-50 v1.5, 224x224)
        ("bert-base", 22.4e9),  # 2 x 85.0 M encoder weights x 128 tokens + 0.6 GFLOP attention
        ("minilm-l6", 2.87e9),  # 2 x 10.6 M encoder weights x 128 tokens + 0.15 GFLOP attention
    ],
)
def test_standard_costs_match_hand_counts(name: str, expected_flops: float) -> None:
    cost = workload_cost(name, "standard")
    assert cost.flops == pytest.approx(expected_flops, rel=0.05)
