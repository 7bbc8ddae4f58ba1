"""The generating stacks' table (``accelbench.registry``) and exporter: reasons instead of crashes."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelbench.errors import UserError
from accelbench.generation import exporter
from accelbench.generation.base import GenerationStack
from accelbench.generation.reference import REFERENCE
from accelbench.registry import GENERATING_STACKS as STACKS
from accelbench.registry import named


def test_every_listed_stack_builds_and_names_itself() -> None:
    for name in STACKS:
        stack = _stack(name)
        assert isinstance(stack, GenerationStack)
        assert stack.name == name
        assert stack.precision in {"fp32", "fp16", "bf16", "int8", "int4"}
        assert set(stack.layers) == {"framework", "compiler", "platform"}
    assert _stack(REFERENCE).precision == "fp32"


def test_unknown_stack_is_a_user_error() -> None:
    with pytest.raises(UserError, match="unknown generating stack vllm; known: "):
        _stack("vllm")


def test_a_missing_exporter_venv_is_a_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(exporter.ENV_VAR, str(tmp_path / "nowhere" / "bin" / "python"))
    assert exporter.exporter_python() == tmp_path / "nowhere" / "bin" / "python"
    reason = _stack("openvino-genai").unavailable_reason("cpu")
    assert reason is not None and "no optimum-intel exporter venv" in reason
    assert "exporter" not in (_stack("openvino-genai-gguf").unavailable_reason("cpu") or "")  # reads the GGUF


def test_stacks_on_another_device_say_why() -> None:
    for name in STACKS:
        reason = _stack(name).unavailable_reason("cuda:0")
        assert reason is not None and ("cpu only" in reason or "not installed" in reason)


def _stack(name: str) -> GenerationStack:
    stack: GenerationStack = named("generating stack", name)
    return stack
