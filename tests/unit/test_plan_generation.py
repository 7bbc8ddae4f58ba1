"""The runner's plan for the generative workloads: generating stacks only, their scenarios, canonical."""

from __future__ import annotations

import pytest

from accelbench import registry
from accelbench.config import suite, with_overrides
from accelbench.errors import UserError
from accelbench.runner import plan


def test_tiny_llama_runs_on_every_generating_stack_and_resnet_on_the_inference_ones() -> None:
    config = with_overrides(suite("tiny"), {"workloads": ("tiny-llama", "resnet50")})
    config = with_overrides(config, {"generation_stacks": tuple(registry.GENERATING_STACKS)})
    cells = plan(config)
    llm = [c for c in cells if c.cell.workload == "tiny-llama"]
    assert {c.cell.stack for c in llm} == set(registry.GENERATING_STACKS)
    assert {c.cell.scenario for c in llm} == {"single-stream", "offline"}
    assert all(c.stack_ref == registry.GENERATING_STACKS[c.cell.stack] for c in llm)
    assert all(c.cell.variant == "canonical" for c in llm)
    assert {c.driver_ref for c in llm} == {registry.DRIVERS["tokens"]}
    assert {c.driver_ref for c in cells if c.cell.workload == "resnet50"} == {registry.DRIVERS["loadgen"]}
    resnet = {c.cell.stack for c in cells if c.cell.workload == "resnet50"}
    assert resnet == {"null", "torch-eager", "torch-inductor", "onnxruntime"}


def test_llm_suite_runs_smollm2_single_stream_on_its_stacks_and_default_leaves_it_out() -> None:
    llm = [c.cell for c in plan(suite("llm"))]
    assert [(c.workload, c.stack, c.scenario) for c in llm] == [
        ("smollm2-135m", "torch-eager", "single-stream"),
        ("smollm2-135m", "llm@transformers-cb", "single-stream"),
    ]
    assert not [c for c in plan(suite("default")) if c.cell.workload == "smollm2-135m"]


def test_chosen_stacks_split_by_task_and_multi_stream_is_not_an_llm_scenario() -> None:
    config = with_overrides(
        suite("tiny"),
        {"workloads": ("tiny-llama", "minilm-l6"), "stacks": ("torch-eager", "ort-genai", "onnxruntime")},
    )
    config = with_overrides(config, {"scenarios": ("single-stream", "multi-stream")})
    cells = {(c.cell.workload, c.cell.stack, c.cell.scenario) for c in plan(config)}
    assert cells == {
        ("tiny-llama", "torch-eager", "single-stream"),
        ("tiny-llama", "ort-genai", "single-stream"),
        *(
            ("minilm-l6", s, c)
            for s in ("torch-eager", "onnxruntime")
            for c in ("single-stream", "multi-stream")
        ),
    }


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"workloads": ("tiny-llama",), "stacks": ("onnxruntime",)},
            "no cell to run .tiny-llama: it runs on generating stacks",
        ),
        (
            {"workloads": ("resnet50",), "stacks": ("ort-genai",)},
            "no cell to run .resnet50: none of the stacks ort-genai",
        ),
        ({"workloads": ("tiny-llama",), "stacks": ("vllm",)}, "unknown stack vllm"),
    ],
)
def test_a_plan_without_a_cell_or_an_unknown_stack_is_a_user_error(overrides: dict, message: str) -> None:
    with pytest.raises(UserError, match=message):
        plan(with_overrides(suite("tiny"), overrides))


def test_a_workload_without_a_cell_is_left_out_when_others_have_cells() -> None:
    config = with_overrides(suite("default"), {"stacks": ("onnxruntime",)})
    cells = plan(config)
    assert {c.cell.workload for c in cells} == {"resnet50", "minilm-l6"}  # no generating stack


class DrivenStack:
    """A stack measured its own way (as a served model's endpoint would be): it names its driver."""

    driver = "train-to-quality"


class MisdrivenStack:
    driver = "nope"


def test_a_stack_that_names_its_driver_overrides_the_workloads() -> None:
    from accelbench import runner

    declared = runner.Declared("tokens", registry.DRIVERS["tokens"], ("single-stream",))
    own = f"{__name__}:DrivenStack"
    assert registry.stack_driver(own) == "train-to-quality"
    assert runner._driver_ref(declared, own) == registry.DRIVERS["train-to-quality"]
    plain = registry.GENERATING_STACKS["torch-eager"]
    assert registry.stack_driver(plain) is None
    assert runner._driver_ref(declared, plain) == registry.DRIVERS["tokens"]
    assert registry.stack_driver("no.such.module:Stack") is None
    with pytest.raises(UserError, match="unknown driver nope"):
        runner._driver_ref(declared, f"{__name__}:MisdrivenStack")


def test_a_plugin_cannot_bring_its_own_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    """A vendor's package registers a driver that would write its own verdict: the table ignores it, and a
    stack naming it is a UserError, while its stack itself is listed."""
    from importlib.metadata import EntryPoint

    from accelbench import runner

    def planted(group: str) -> list[EntryPoint]:
        return [EntryPoint("judge-myself", "vendor.judge:measure", group)]

    monkeypatch.setattr(registry, "entry_points", planted)
    assert registry.table("stack")["judge-myself"] == "vendor.judge:measure"
    assert registry.table("driver") == dict(registry.DRIVERS)
    declared = runner.Declared("loadgen", registry.DRIVERS["loadgen"], ("offline",))
    with pytest.raises(UserError, match="unknown driver judge-myself"):
        runner._driver_ref(declared, f"{__name__}:SelfJudgingStack")


class SelfJudgingStack:
    driver = "judge-myself"
