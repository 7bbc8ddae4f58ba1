"""A real ``transformers serve`` of smollm2-135m for tests and benchmarks that need an OpenAI endpoint.

A stand-in until accelbench's own launcher (issue 31, ``accelbench/endpoint/``) is merged: it starts the
server the way shared/reference/llm_serving_feasibility.md measured it (the dequantized folder
accelbench's LLM path builds, started in that folder's parent so the model id is the short name,
``OMP_NUM_THREADS``, ``--device cpu``; continuous batching with a bounded KV cache, else it sizes the
cache from the machine's RAM), through ``accelbench.serving.process`` (own session, ``/health``
readiness, stopped whatever happens). It needs the ``openai`` package beside transformers.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from accelbench.serving import process

MODEL_ID = "smollm2-135m"
READY_TIMEOUT_S = 300.0
"""Ready in 13-17 s on a loaded 2-core machine (the model loads before uvicorn starts)."""
CB_ARGS = ("--continuous-batching", "--cb-num-blocks", "32", "--cb-max-batch-tokens", "2048")
"""32 pages of 256 tokens: 8192 tokens of KV cache, 1.5 GB RSS (7.3 GB with the defaults)."""
LAUNCH = (
    "import os, sys; os.chdir(sys.argv.pop(1)); from transformers.cli.transformers import main; "
    "sys.argv[0] = 'transformers'; sys.exit(main())"
)


def unavailable_reason() -> str | None:
    """Why ``transformers serve`` cannot run here, or None."""
    missing = [name for name in ("openai", "fastapi", "uvicorn") if importlib.util.find_spec(name) is None]
    return f"transformers serve needs {', '.join(missing)}" if missing else None


def model_folder(cache_dir: Path) -> Path:
    """smollm2-135m's dequantized folder under ``cache_dir`` (built once, ~1 min)."""
    from accelbench.generation.models import load_model

    load_model(MODEL_ID, cache_dir)
    return cache_dir / "llm" / MODEL_ID


@contextlib.contextmanager
def transformers_serve(
    cache_dir: Path, log_path: Path, continuous_batching: bool = True, threads: int = 1
) -> Iterator[str]:
    """``transformers serve`` of smollm2-135m on a free loopback port; yields its base URL."""
    folder = model_folder(cache_dir)
    port = process.free_port()
    argv = [sys.executable, "-c", LAUNCH, str(folder.parent), "serve", MODEL_ID, "--host", process.HOST,
            "--port", str(port), "--device", "cpu", *(CB_ARGS if continuous_batching else ())]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(threads)}
    url = f"http://{process.HOST}:{port}"
    server = process.start(
        "transformers-serve", argv, [port], log_path, lambda: _healthy(url), READY_TIMEOUT_S, env=env
    )
    try:
        yield url
    finally:
        process.stop(server)


def _healthy(url: str) -> bool:
    with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:
        return bool(reply.status == 200)
