"""The LLM servers accelbench starts itself (``--serve transformers``): name -> class, imported lazily.

A server has ``unavailable_reason()`` (None when it can run here), ``start(model, folder, settings)``
returning ``(url, model id)`` once it answers, and ``stop()`` (safe to call twice). ``extra_body`` are
the server's own request fields that fix the reply's length (no other field outside the OpenAI schema
is ever sent). ``transformers serve`` runs on loopback through ``accelbench.serving.process`` (own
session, readiness on ``/health``, SIGTERM then the session killed, ports checked) from the fp32 folder
of ``accelbench.generation.models``; with ``-cb``, continuous batching with a KV cache sized to the load
(its default sizes it from the machine's RAM: ~7 GB). ``vllm`` and ``sglang`` are GPU servers: here
they are unavailable with the reason.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from accelbench.errors import UserError
from accelbench.registry import instantiate

SERVERS: Mapping[str, str] = {
    "transformers": "accelbench.endpoint.servers:TransformersServer",
    "transformers-cb": "accelbench.endpoint.servers:TransformersCbServer",
    "llamacpp": "accelbench.endpoint.llamacpp_server:LlamaCppServer",
    "vllm": "accelbench.endpoint.servers:VllmServer",
    "sglang": "accelbench.endpoint.servers:SglangServer",
}
"""The servers by name (the endpoint stack ``llm@<name>`` runs on each)."""
READY_TIMEOUT_S = 300.0
CB_BLOCK_TOKENS = 256


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """What a server is started for: the most requests in flight, the longest reply, the threads."""

    max_concurrency: int
    max_tokens: int
    threads: int


class EndpointServer(ABC):
    """A server accelbench starts and stops around an endpoint cell."""

    name: ClassVar[str]
    prefix_cache: ClassVar[str] = "undeclared"
    """The server's KV reuse between requests as accelbench starts it (stored with every sessions
    figure: a cache-on figure is never shown unlabelled)."""

    @abstractmethod
    def unavailable_reason(self) -> str | None:
        """Why the server cannot run here, or None."""

    @abstractmethod
    def start(self, model_folder: Path, log_dir: Path, settings: ServerSettings) -> tuple[str, str]:
        """Start serving the model of ``model_folder``; return ``(base url, model id)`` once ready."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the server and everything it started (safe to call twice)."""

    def extra_body(self, max_tokens: int) -> dict[str, Any]:
        """The server's own request fields that make every reply ``max_tokens`` long (none: {})."""
        return {}


def special_token_ids(model_folder: Path) -> tuple[int, ...]:
    """The ids of every special token of the model's own tokenizer (EOS, BOS, the template's markers)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_folder)
    return tuple(sorted(int(i) for i in tokenizer.all_special_ids))


def prefix_cache(server: str) -> str:
    """The cache label of a server kind (``url``: the ``--serve-url`` server, whose settings are its own)."""
    if server not in SERVERS:
        return "undeclared (a server accelbench did not start)"
    return get_server(server).prefix_cache


def get_server(name: str) -> EndpointServer:
    """A fresh instance of the server ``name``; UserError for an unknown one."""
    if name not in SERVERS:
        raise UserError(f"unknown LLM server {name!r}; choose one of: {', '.join(SERVERS)}")
    server: EndpointServer = instantiate(SERVERS[name])
    return server


class TransformersServer(EndpointServer):
    """``transformers serve``, one request at a time (no continuous batching)."""

    name: ClassVar[str] = "transformers"
    continuous_batching: ClassVar[bool] = False
    prefix_cache: ClassVar[str] = "off: no KV kept between requests"

    def __init__(self) -> None:
        self._process: Any = None
        self._special_ids: tuple[int, ...] = ()

    def unavailable_reason(self) -> str | None:
        """``transformers serve`` needs fastapi, uvicorn, pydantic and openai beside transformers."""
        missing = [m for m in ("transformers", "fastapi", "uvicorn", "pydantic", "openai") if not _found(m)]
        return (
            f"transformers serve needs {', '.join(missing)} (pip install accelbench[endpoint])"
            if missing
            else None
        )

    def start(self, model_folder: Path, log_dir: Path, settings: ServerSettings) -> tuple[str, str]:
        """Start it in the folder's parent, so the model id is the folder's name."""
        from accelbench.serving import metrics, process

        self._special_ids = special_token_ids(model_folder)

        port = process.free_port()
        url = f"http://{process.HOST}:{port}"
        args = ["serve", model_folder.name, "--host", process.HOST, "--port", str(port), "--device", "cpu"]
        args += self._batching(settings)
        argv = [
            sys.executable,
            "-m",
            "accelbench.endpoint.transformers_app",
            str(os.getpid()),
            str(model_folder.parent),
            *args,
        ]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(max(1, settings.threads))}
        self._process = process.start(
            self.name,
            argv,
            [port],
            log_dir / f"{self.name}.log",
            lambda: metrics.http_ok(f"{url}/health"),
            READY_TIMEOUT_S,
            env=env,
        )
        return url, model_folder.name

    def _batching(self, settings: ServerSettings) -> list[str]:
        if not self.continuous_batching:
            return []
        blocks = max(4, -(-settings.max_concurrency * (1024 + settings.max_tokens) // CB_BLOCK_TOKENS))
        return ["--continuous-batching", "--cb-num-blocks", str(blocks), "--cb-max-batch-tokens", "2048"]

    def stop(self) -> None:
        """SIGTERM, then the session killed (``accelbench.serving.process.stop``)."""
        from accelbench.serving import process

        if self._process is not None:
            process.stop(self._process)

    def extra_body(self, max_tokens: int) -> dict[str, Any]:
        """The server's ``generation_config`` (a JSON string): greedy, and every special token (EOS and
        the chat template's turn markers) suppressed, so each reply is ``max_tokens`` tokens of text.
        With EOS merely ignored a chat model runs into the template's next turn, whose markers the
        server strips from the text: the client, which counts the text, would see fewer tokens than
        were generated (and the reply would hold more than one EOS, which MLPerf's rules forbid)."""
        suppressed = list(self._special_ids)
        config = {"max_new_tokens": max_tokens, "do_sample": False, "suppress_tokens": suppressed}
        return {"generation_config": json.dumps(config)}


class TransformersCbServer(TransformersServer):
    """``transformers serve --continuous-batching`` (a prefix cache of 256-token pages on by default)."""

    name: ClassVar[str] = "transformers-cb"
    continuous_batching: ClassVar[bool] = True
    prefix_cache: ClassVar[str] = "on: shared 256-token pages (the server's default)"


class _GpuServer(EndpointServer):
    """A GPU server: documented, unavailable where its package or a GPU is missing."""

    package: ClassVar[str]

    def unavailable_reason(self) -> str | None:
        """Not installed here (it needs a CUDA or ROCm machine); starting it is not wired yet."""
        if not _found(self.package):
            return (
                f"{self.name} is not installed (a GPU server: pip install {self.package} on a CUDA machine)"
            )
        return f"{self.name}: accelbench does not start it yet; run it yourself and use --serve-url"

    def start(self, model_folder: Path, log_dir: Path, settings: ServerSettings) -> tuple[str, str]:
        """Never reached: the server is unavailable."""
        raise NotImplementedError(self.unavailable_reason() or self.name)

    def stop(self) -> None:
        """Nothing was started."""


class VllmServer(_GpuServer):
    """``vllm serve``."""

    name: ClassVar[str] = "vllm"
    package: ClassVar[str] = "vllm"


class SglangServer(_GpuServer):
    """SGLang's server."""

    name: ClassVar[str] = "sglang"
    package: ClassVar[str] = "sglang"


def _found(module: str) -> bool:
    return importlib.util.find_spec(module) is not None
