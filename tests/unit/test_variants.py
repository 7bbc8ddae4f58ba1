"""Tests of the seeded variants: reproducible from their name, FLOPs in the band, planned by the runner."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from accelbench import runner, variants
from accelbench.config import RunConfig, with_variant_seed
from accelbench.errors import Unsupported, UserError
from accelbench.workloads.base import Variant, Workload
from accelbench.workloads.bert import BertBase
from accelbench.workloads.minilm import DROPPABLE_LAYERS, MiniLM
from accelbench.workloads.resnet50 import ResNet50

WORKLOADS = [ResNet50(), BertBase(), MiniLM()]


def ids(workload: Workload) -> str:
    return workload.name


def records(workload: Workload, seed: int, count: int = 3) -> list[tuple[object, ...]]:
    drawn = [variants.draw_variant(workload, "tiny", name) for name in variants.variant_names(seed, count)]
    return [(d.variant.mutations, dict(d.variant.changes), d.flops) for d in drawn]


@pytest.mark.parametrize("workload", WORKLOADS, ids=ids)
def test_same_seed_same_variants_other_seed_other_variants(workload: Workload) -> None:
    first = records(workload, 7)
    assert first == records(workload, 7)
    assert first != records(workload, 8)
    assert all(mutations for mutations, _, _ in first)


@pytest.mark.parametrize("workload", WORKLOADS, ids=ids)
def test_variant_flops_stay_in_the_band_and_are_recorded(workload: Workload) -> None:
    for name in variants.variant_names(3, 4):
        drawn = variants.draw_variant(workload, "tiny", name)
        info = variants.variant_info(drawn)
        low, high = variants.FLOPS_BAND
        assert info.flops_ratio is not None and low <= info.flops_ratio <= high
        assert info.canonical_flops == variants.count_flops(workload, "tiny", None)
        assert info.variant_seed == info.drawn_seed == 3 and info.index == drawn.index
        document = info.to_dict()
        assert all(set(m) == {"kind", "detail"} for m in document["mutations"])
        assert "seed" not in document and document["variant_seed"] == 3


def test_canonical_flops_match_the_cost_model() -> None:
    from accelbench.workloads.flops import count_flops, model_cost

    workload = BertBase()
    model = workload.build_model("tiny", 0)
    expected = model_cost(model, workload.make_sample("tiny", 0, 0)).flops
    assert variants.count_flops(workload, "tiny", None) == expected
    assert expected == sum(
        count_flops(model, tuple(map(torch.from_numpy, workload.make_sample("tiny", 0, 0)))).values()
    )


def test_resnet_widths_leave_multiples_of_eight() -> None:
    found = []
    for name in variants.variant_names(11, 6):
        changes = variants.draw_variant(ResNet50(), "standard", name).variant.changes
        found.extend(changes.get("widths", ()))
    assert found and all(width % 8 for width in found)


@pytest.mark.parametrize("workload", WORKLOADS, ids=ids)
def test_variant_model_runs_on_its_own_samples(workload: Workload) -> None:
    drawn = variants.draw_variant(workload, "tiny", "s5-v1")
    model = workload.build_model("tiny", 0, drawn.variant)
    sample = workload.make_sample("tiny", 0, 0, drawn.variant)
    with torch.no_grad():
        output = model(*(torch.from_numpy(a) for a in sample)).numpy()
    assert np.isfinite(output).all()
    again = workload.make_sample("tiny", 0, 0, drawn.variant)
    assert all(np.array_equal(a, b) for a, b in zip(sample, again, strict=True))


ENDS = (DROPPABLE_LAYERS[0], DROPPABLE_LAYERS[-1])
"""make test drops the first and the last layer (8-16 s each); make test-all every one."""


@pytest.mark.parametrize(
    "dropped", [d if d in ENDS else pytest.param(d, marks=pytest.mark.exhaustive) for d in DROPPABLE_LAYERS]
)
def test_minilm_depth_variant_keeps_the_sanity_check(dropped: int) -> None:
    workload = MiniLM()
    variant = Variant("s0-v1", {"dropped_layer": dropped, "seq_len": 29})
    model = workload.build_model("tiny", 0, variant)

    def infer(inputs: tuple[np.ndarray, ...]) -> np.ndarray:
        with torch.no_grad():
            return model(*(torch.from_numpy(a) for a in inputs)).numpy()

    verdict = workload.sanity_check("tiny", infer, variant)
    assert verdict.passed, verdict.detail


def test_names_parse_and_malformed_names_are_user_errors() -> None:
    assert variants.variant_names(42, 2) == ("s42-v1", "s42-v2")
    assert variants.parse_name("s42-v2") == (42, 2)
    for bad in ("v1", "s1-v0", "s-1-v2", "canonical"):
        with pytest.raises(UserError):
            variants.parse_name(bad)
    assert variants.resolve(ResNet50(), "tiny", "canonical") is None


def test_a_workload_without_generator_is_unsupported() -> None:
    class Plain(ResNet50):
        name = "plain"

        def draw_changes(self, size: str, rng: np.random.Generator) -> object:  # type: ignore[override]
            return Workload.draw_changes(self, size, rng)

    with pytest.raises(Unsupported):
        variants.draw_variant(Plain(), "tiny", "s1-v1")


def _config(**fields: object) -> RunConfig:
    base = dict(
        suite="test",
        workloads=("resnet50",),
        stacks=("null", "torch-eager"),
        scenarios=("single-stream",),
        size="tiny",
        rules="quick",
    )
    return RunConfig(**{**base, **fields})  # type: ignore[arg-type]


def test_plan_adds_variant_cells_except_for_the_null_stack() -> None:
    planned = runner.plan(_config(variants=2, variant_seed=9))
    by_stack = {
        stack: [p.cell.variant for p in planned if p.cell.stack == stack] for stack in ("null", "torch-eager")
    }
    assert by_stack == {"null": ["canonical"], "torch-eager": ["canonical", "s9-v1", "s9-v2"]}
    assert [p.cell.variant for p in runner.plan(_config())] == ["canonical", "canonical"]


def test_a_fresh_variant_seed_is_drawn_and_kept_in_the_config() -> None:
    config = with_variant_seed(_config(variants=1))
    assert config.variant_seed is not None and 0 <= config.variant_seed < variants.names.SEED_LIMIT
    assert RunConfig.from_dict(config.to_dict()) == config
    assert with_variant_seed(_config(variants=1, variant_seed=5)).variant_seed == 5
    assert with_variant_seed(_config()).variant_seed is None
    with pytest.raises(UserError):
        runner.plan(_config(variants=1))
    with pytest.raises(UserError):
        _config(variants=-1)
