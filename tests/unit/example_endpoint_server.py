"""A new endpoint server kind (``llm@<kind>``), written as the architecture's count says: the worked example
the count is checked on (``test_adding_an_endpoint_server``).

``example-echo`` is a stand-in for an LLM server: an OpenAI-compatible streaming server of the standard
library (``tests.unit.example_endpoint_server_app``) whose replies are words drawn from the prompt (no
model), ending early unless the request says ``ignore_eos``. What a developer writes for a kind is its
``EndpointServer`` class (start, stop, the length-forcing ``extra_body``, the declared ``prefix_cache``) and
its endpoint stack (a subclass naming the server), both here, and two rows the test adds: one in
``accelbench.endpoint.servers.SERVERS`` and one in ``accelbench.registry.ENDPOINT_STACKS``. The process,
its readiness, its stop (SIGTERM, then its session killed, its port checked free), the client and the
settings it is started with are the harness's.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, ClassVar

from accelbench.endpoint.servers import EndpointServer, ServerSettings
from accelbench.endpoint.stack import EndpointStack
from accelbench.serving import metrics, process
from accelbench.serving.process import HOST, ServerProcess

KIND = "example-echo"
READY_TIMEOUT_S = 30.0


class ExampleEchoServer(EndpointServer):
    """The example app on loopback, one per cell; ready when ``/health`` answers."""

    name: ClassVar[str] = KIND
    prefix_cache: ClassVar[str] = "off: no model, no KV (each reply is drawn from its prompt)"

    def __init__(self) -> None:
        self._server: ServerProcess | None = None

    def unavailable_reason(self) -> str | None:
        """None: it needs the standard library only."""
        return None

    def start(self, model_folder: Path, log_dir: Path, settings: ServerSettings) -> tuple[str, str]:
        """Start the app for the folder's model (its name is the model id); log into ``log_dir``."""
        port = process.free_port()
        url = f"http://{HOST}:{port}"
        self._server = process.start(
            self.name,
            command(model_folder, port, settings),
            [port],
            log_dir / f"{self.name}.log",
            lambda: metrics.http_ok(f"{url}/health"),
            READY_TIMEOUT_S,
            env={**os.environ},
        )
        return url, model_folder.name

    def stop(self) -> None:
        """SIGTERM, then the session killed (``accelbench.serving.process.stop``); safe to call twice."""
        if self._server is not None:
            process.stop(self._server)

    def extra_body(self, max_tokens: int) -> dict[str, Any]:
        """``ignore_eos``: the app's replies then run to ``max_tokens`` words."""
        return {"ignore_eos": True}

    @property
    def leftovers(self) -> list[str]:
        """What the last stop found still alive or listening (empty after a clean stop)."""
        return [] if self._server is None else list(self._server.leftovers)


def command(model_folder: Path, port: int, settings: ServerSettings) -> list[str]:
    """The app's command line for ``settings`` (the most requests in flight, the longest reply, threads)."""
    return [
        sys.executable,
        "-m",
        "tests.unit.example_endpoint_server_app",
        "--model",
        model_folder.name,
        "--port",
        str(port),
        "--max-concurrency",
        str(settings.max_concurrency),
        "--max-tokens",
        str(settings.max_tokens),
        "--threads",
        str(settings.threads),
        "--owner",
        str(os.getpid()),
    ]


class ExampleEchoEndpoint(EndpointStack):
    """``llm@example-echo``: the endpoint stack that names the server."""

    server: ClassVar[str] = KIND
