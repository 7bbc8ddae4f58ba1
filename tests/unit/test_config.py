"""Run configuration: suites, overrides, TOML files and validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelbench import registry
from accelbench.config import RunConfig, effective_threads, load_toml, suite, with_overrides
from accelbench.errors import UserError


def test_suites_plan_what_the_readme_says() -> None:
    default = suite("default")
    assert default.workloads == ("resnet50", "minilm-l6")  # bert-base: quick; smollm2: the llm suite
    assert suite("quick").workloads == ("resnet50", "bert-base", "minilm-l6")
    assert default.stacks == ("torch-eager", "onnxruntime")  # inductor: quick and tiny suites
    assert "torch-inductor" in suite("quick").stacks
    assert default.scenarios == ("single-stream", "offline") and default.size == "standard"
    assert suite("llm").workloads == ("smollm2-135m",)
    assert suite("llm").generation_scenarios == ("single-stream",)
    assert suite("llm").generation_stacks == ("torch-eager", "llm@transformers-cb")  # in process, served
    assert (suite("llm").knobs["concurrency"], suite("llm").knobs["output_tokens"]) == ((1, 2, 4, 8), 64)
    tiny = suite("tiny")
    assert tiny.size == "tiny" and tiny.generation_stacks == tuple(registry.GENERATING_STACKS)


def test_choosing_stacks_or_scenarios_also_chooses_them_for_the_generative_workloads() -> None:
    config = with_overrides(suite("default"), {"stacks": ("torch-eager",), "scenarios": ("offline",)})
    assert config.generation_stacks == () and config.generation_scenarios == ()
    kept = with_overrides(suite("default"), {"seed": 3})
    assert kept.generation_stacks == suite("default").generation_stacks


def test_overrides_replace_fields_and_round_trip() -> None:
    config = with_overrides(suite("tiny"), {"stacks": ("null",), "seed": 7, "rules": None})
    assert config.stacks == ("null",) and config.seed == 7 and config.rules == "quick"
    assert RunConfig.from_dict(config.to_dict()) == config


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"scenarios": ("burst",)}, "unknown scenario burst"),
        ({"size": "huge"}, "unknown size huge"),
        ({"rules": "lax"}, "lax"),
        ({"timeout_s": -1.0}, "positive"),
        ({"colour": "red"}, "unknown run setting colour"),
    ],
)
def test_bad_settings_are_user_errors(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(UserError, match=message):
        with_overrides(suite("tiny"), overrides)


def test_unknown_suite_is_a_user_error() -> None:
    with pytest.raises(UserError, match="unknown suite"):
        suite("enormous")


def test_toml_run_table_is_read(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text('[run]\nworkloads = ["minilm-l6"]\nseed = 3\n')
    config = with_overrides(suite("tiny"), load_toml(path))
    assert config.workloads == ("minilm-l6",) and config.seed == 3


def test_malformed_toml_is_a_user_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[run\nseed = ")
    with pytest.raises(UserError, match=r"config .*bad\.toml: invalid TOML"):
        load_toml(path)


def test_threads_default_to_usable_cpus() -> None:
    assert effective_threads(suite("tiny")) >= 1
    assert effective_threads(with_overrides(suite("tiny"), {"threads": 1})) == 1


def test_registry_resolves_known_names_and_rejects_others() -> None:
    refs = registry.resolve("stack", ("null", "onnxruntime"))
    assert refs["null"] == "accelbench.stacks.null:NullStack"
    assert registry.instantiate(refs["null"]).name == "null"
    with pytest.raises(UserError, match="unknown stack nope; known:"):
        registry.resolve("stack", ("nope",))
