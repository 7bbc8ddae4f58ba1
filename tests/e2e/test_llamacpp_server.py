"""llama.cpp's server from the ``xllamacpp`` wheel (accelbench/endpoint/llamacpp_server.py) for real: start
it on smollm2's GGUF, one streamed completion, stop it; no process of its session left, its port free. And
a launcher whose owner dies takes its server with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from accelbench.endpoint.llamacpp_server import MODEL_ID, LlamaCppServer
from accelbench.generation.models import smollm2_gguf
from accelbench.serving import process
from accelbench.serving.sessions import session_pids


@dataclass(frozen=True, slots=True)
class Settings:
    """What the server is started for (the fields of accelbench.endpoint.servers.ServerSettings)."""

    max_concurrency: int
    max_tokens: int
    threads: int


REASON = LlamaCppServer().unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=str(REASON))


def _stream(url: str, body: dict[str, object]) -> list[dict]:
    """The parsed ``data:`` events of a streamed ``/v1/completions`` reply (``[DONE]`` left out)."""
    request = urllib.request.Request(
        f"{url}/v1/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    events = []
    with urllib.request.urlopen(request, timeout=120) as reply:
        assert reply.status == 200
        assert reply.headers["Content-Type"].startswith("text/event-stream")
        for raw in reply:
            line = raw.decode().strip()
            if line.startswith("data: ") and line != "data: [DONE]":
                events.append(json.loads(line[len("data: ") :]))
    return events


def test_start_one_streamed_completion_stop_leaves_nothing(tmp_path: Path) -> None:
    server = LlamaCppServer()
    url, model = server.start(tmp_path / "unused-fp32-folder", tmp_path, Settings(2, 16, 1))
    sid = server.pid
    assert sid is not None
    port = int(url.rsplit(":", 1)[1])
    try:
        assert url.startswith("http://127.0.0.1:") and model == MODEL_ID
        events = _stream(
            url,
            {"model": model, "prompt": "The capital of France is", "max_tokens": 6, "stream": True,
             "cache_prompt": False, "temperature": 0, **server.extra_body(6)},
        )  # fmt: skip
        text = "".join(event["choices"][0]["text"] for event in events)
        usage = events[-1]["usage"]
        assert usage["completion_tokens"] == 6
        assert usage["prompt_tokens"] >= 5
        assert events[-1]["choices"][0]["finish_reason"] == "length"
        assert len(events) >= 6  # token by token: one event per token, then the closing one
        assert "Paris" in text  # greedy smollm2-135m knows this one
        assert session_pids(sid)  # it was running
        assert (tmp_path / "llamacpp.log").is_file()
    finally:
        server.stop()
    assert server.leftovers == []
    assert session_pids(sid) == []
    assert not process.port_in_use(port)
    server.stop()  # twice is safe
    assert server.leftovers == []


def test_launcher_stops_when_its_owner_is_killed(tmp_path: Path) -> None:
    """The owner (a cell process, here a sleeping shell) is SIGKILLed: the launcher's guard ends the
    server's session by itself."""
    owner = subprocess.Popen(["sleep", "600"])
    port = process.free_port()
    argv = [
        sys.executable, "-m", "accelbench.endpoint.llamacpp_server", "--gguf", str(smollm2_gguf()),
        "--port", str(port), "--threads", "1", "--slots", "1", "--context-tokens", "256",
        "--owner", str(owner.pid),
    ]  # fmt: skip
    health = f"http://127.0.0.1:{port}/health"
    server = process.start(
        "llamacpp-server", argv, [port], tmp_path / "server.log",
        lambda: urllib.request.urlopen(health, timeout=2).status == 200, 120.0,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )  # fmt: skip
    try:
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
        deadline = time.monotonic() + 20
        while session_pids(server.sid) and time.monotonic() < deadline:
            time.sleep(0.25)
        assert session_pids(server.sid) == []
        while process.port_in_use(port) and time.monotonic() < deadline + 5:
            time.sleep(0.25)  # the kernel frees the socket of a killed process soon after
        assert not process.port_in_use(port)
    finally:
        process.stop(server)
