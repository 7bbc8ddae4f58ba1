"""accelbench.generation.stacks and exporter: the stack table, and reasons instead of crashes."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelbench.errors import UserError
from accelbench.generation import exporter
from accelbench.generation.base import GenerationStack
from accelbench.generation.stacks import REFERENCE, STACKS, get_stack, stack_status


def test_every_listed_stack_builds_and_names_itself() -> None:
    for name in STACKS:
        stack = get_stack(name)
        assert isinstance(stack, GenerationStack)
        assert stack.name == name
        assert stack.precision in {"fp32", "fp16", "bf16", "int8", "int4"}
        assert set(stack.layers) == {"framework", "compiler", "platform"}
    assert get_stack(REFERENCE).precision == "fp32"


def test_unknown_stack_is_a_user_error() -> None:
    with pytest.raises(UserError, match="unknown generating stack 'vllm'"):
        get_stack("vllm")


def test_a_missing_exporter_venv_is_a_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(exporter.ENV_VAR, str(tmp_path / "nowhere" / "bin" / "python"))
    assert exporter.exporter_python() == tmp_path / "nowhere" / "bin" / "python"
    status = stack_status("openvino-genai")
    assert not status.available
    assert "no optimum-intel exporter venv" in status.reason
    assert "exporter" not in stack_status("openvino-genai-gguf").reason  # reads the GGUF: no export


def test_stacks_on_another_device_say_why() -> None:
    for name in STACKS:
        status = stack_status(name, device="cuda:0")
        assert not status.available
        assert "cpu only" in status.reason or "not installed" in status.reason
