"""The server under test of the agreement benchmarks (``llm_endpoint_agreement.py``,
``session_agreement.py``, ``request_body_tpot.py``): started on loopback, the fields that force every reply's
length, the greedy warm-up, and the CPU pinning that keeps the clients off the server's CPU."""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _scripted_server import scripted_server

from accelbench.endpoint.llamacpp_server import LlamaCppServer
from accelbench.endpoint.servers import ServerSettings, special_token_ids
from accelbench.endpoint.sse import chunk_text, parse_line
from tests.e2e import served_llm


@contextlib.contextmanager
def server(
    kind: str, cache_dir: Path, out: Path, concurrency: int, output_tokens: int, script_s: tuple[float, float]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The server under test (1 compute thread): its url and the body fields that force the length;
    ``scripted``: a server of known timing (``script_s``: its TTFT and TPOT, ``_scripted_server``)."""
    if kind == "scripted":
        with scripted_server(served_llm.MODEL_ID, *script_s) as url:
            yield url, {}
        return
    if kind == "llamacpp":
        llama = LlamaCppServer()
        url, _ = llama.start(
            out,
            out,
            ServerSettings(max_concurrency=max(16, concurrency), max_tokens=output_tokens, threads=1),
        )
        try:
            yield url, {**llama.extra_body(output_tokens), "cache_prompt": False}
        finally:
            llama.stop()
        return
    with served_llm.transformers_serve(cache_dir, out / "transformers-serve.log") as url:
        yield url, {}


def length_body(kind: str, fixed: dict[str, Any], output_tokens: int, folder: Path) -> dict[str, Any]:
    """The fields forcing every reply's length, as accelbench's own server sends them (transformers serve:
    every special token suppressed, so the reply's text holds every token generated)."""
    if kind in ("llamacpp", "scripted"):
        return fixed
    special = list(special_token_ids(folder))
    config = {"max_new_tokens": output_tokens, "do_sample": False, "suppress_tokens": special}
    return {"generation_config": json.dumps(config)}


def warm_up(url: str, model: str, body: dict[str, Any]) -> None:
    """One greedy request first: transformers' CB manager keeps the first request's generation config."""
    payload = {"model": model, "prompt": "Hello", "max_tokens": 4, **body}
    request = urllib.request.Request(
        f"{url}/v1/completions", json.dumps(payload).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=300) as reply:
        reply.read()


PROBE_PROMPT = " ".join(f"word{i % 97} of the fixed speed probe" for i in range(40))
"""The speed probe's prompt: the same text every time (about 240 tokens), so only the server's speed moves."""
PROBE_TOKENS = 32
PROBE_REQUESTS = 3


def speed_probe(url: str, model: str, body: dict[str, Any]) -> dict[str, float]:
    """The server's speed now, alone: ``PROBE_REQUESTS`` requests of one fixed prompt one after another
    (``PROBE_TOKENS`` forced by ``body``), each streamed; the median TTFT (to the first non-empty text
    chunk) and TPOT ((last chunk - first) / (chunks - 1)). Taken before each client's run, it shows the
    machine drifting between runs, which an A B B A order cancels only when the drift is steady."""
    ttfts, tpots = [], []
    for _ in range(PROBE_REQUESTS):
        payload = {"model": model, "prompt": PROBE_PROMPT, "max_tokens": PROBE_TOKENS, "stream": True, **body}
        request = urllib.request.Request(
            f"{url}/v1/completions", json.dumps(payload).encode(), {"Content-Type": "application/json"}
        )
        try:
            chunks = _streamed(request)
        except (OSError, ValueError) as err:  # the probe informs; a failed one is said, the run goes on
            print(f"speed probe failed: {str(err)[:200]}", flush=True)
            return {}
        sent_s, text_s = chunks[0], chunks[1:]
        if len(text_s) >= 2:
            ttfts.append(text_s[0] - sent_s)
            tpots.append((text_s[-1] - text_s[0]) / (len(text_s) - 1))
    if not tpots:
        return {}
    return {"ttft_s": statistics.median(ttfts), "tpot_s": statistics.median(tpots)}


def probed(url: str, model: str, body: dict[str, Any], folder: Path) -> dict[str, float]:
    """``speed_probe`` just before a client's run, stored as ``folder/probe.json`` beside the run."""
    probe = speed_probe(url, model, body)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "probe.json").write_text(json.dumps(probe))
    return probe


def _streamed(request: urllib.request.Request) -> list[float]:
    """When each non-empty text chunk of ``request``'s streamed reply arrived (the request's send first),
    read with accelbench's own SSE parser."""
    chunks = [time.perf_counter()]
    with urllib.request.urlopen(request, timeout=300) as reply:
        for line in reply:
            event = parse_line(line)
            if event is not None and event.chunk is not None and chunk_text(event.chunk):
                chunks.append(time.perf_counter())
    return chunks


def pin_server(pin: bool) -> frozenset[int]:
    """With ``pin``, this process (and what it starts next: a child inherits its affinity) on its first
    CPU, for the server; returns every CPU it had, for ``pin_clients``."""
    cpus = frozenset(os.sched_getaffinity(0))
    if pin:
        os.sched_setaffinity(0, {min(cpus)})
        print(f"server on CPU {min(cpus)}", flush=True)
    return cpus


def pin_clients(pin: bool, cpus: frozenset[int]) -> None:
    """With ``pin``, this process and the clients it starts (accelbench and the peers alike) on every CPU
    of ``cpus`` but the server's, so a client's own CPU (AIPerf's is 3-4x accelbench's) is never taken
    from the server (all of them on a one-CPU machine)."""
    if pin:
        os.sched_setaffinity(0, (cpus - {min(cpus)}) or cpus)
        print(f"clients on CPU {sorted(os.sched_getaffinity(0))}", flush=True)
