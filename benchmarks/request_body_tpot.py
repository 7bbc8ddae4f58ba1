"""Does the request body, or accelbench's own client, change a server's decode speed? Senders, wave by
wave, on one server.

Stop 63 found AIPerf's TPOT 5% below accelbench's at c=4 on one ``transformers serve`` (pinned, 6 rounds
each way round, paired [0.930, 0.958]), already in the first wave of four requests sent at once on an
idle server, with the same load in flight. The two clients' bodies differ: accelbench's ``llm@url``
sends ``temperature: 0.0`` and no ``generation_config`` (the server then takes the model's own config,
its EOS id included, per request), AIPerf the benchmark's ``generation_config`` (every special token
suppressed, no EOS id). This sends waves of ``--concurrency`` requests at once, the same prompts
(salted anew per request: nothing to cache) from each sender of ``--senders``, their order rotated wave
by wave, and prints each sender's TPOT per request (last chunk - first chunk) / (chunks - 1), its median
with a 95% interval, and the paired ratio to the first sender (the k-th request of a wave against the
k-th of the other sender's wave next to it). Senders:
- ``accelbench``: a plain aiohttp client (one pooled session) with accelbench's body;
- ``aiperf``: the same client with AIPerf's body;
- ``driver``: accelbench's own client (``accelbench.endpoint.client.send``) as its endpoint driver runs
  it: a new connection per request, every chunk parsed and timed, the reply counted by the model's
  tokenizer, accelbench's body;
- ``busy``: the plain client with accelbench's body while a process spins on the clients' CPU (does a
  client's own CPU use slow a server on the other CPU?);
- ``cell``: a whole ``accelbench run --stacks llm@url --serve-url`` of one point of ``--concurrency``
  requests (its warm-up, noise guard, energy meter, driver; its inline check after the wave): the
  first wave of its point. It sends the cell's own prompts (126-350 tokens on smollm2, against ~60 here),
  and each request of a wave waits for the others' prefill: compare its split waves with the others',
  not its TPOT (stop 64 read x1.305 for that reason; on the same texts the agreement run's waves match).

Usage: ``python benchmarks/request_body_tpot.py [--waves 16] [--concurrency 4] [--output-tokens 64]
[--senders accelbench,aiperf]`` (the server on the first CPU, this client on the others, as
``llm_endpoint_agreement.py --pin``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import secrets
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from _peers import accelbench_run  # noqa: E402
from _server_under_test import length_body, pin_clients, pin_server, warm_up  # noqa: E402

from accelbench.endpoint.figures import median_interval  # noqa: E402
from tests.e2e import served_llm  # noqa: E402

TEXT = (
    "Explain what the following text is about: Summer carefully quietly summer tower harbor cold small "
    "teacher grows. Again measures field walks forest grows window lamp. Together painter summer counts "
    "carries forest market. Lamp again again city quietly green school. Valley lamp road field city."
)


def bodies(forced: dict[str, Any], output_tokens: int) -> dict[str, dict[str, Any]]:
    """The two clients' fields beside the prompt, as each sent them at stop 63."""
    common = {"model": served_llm.MODEL_ID, "stream": True, "max_tokens": output_tokens}
    usage = {"stream_options": {"include_usage": True}}
    return {
        "accelbench": {**common, "temperature": 0.0, **usage},
        "aiperf": {**common, **forced, **usage},
    }


Reply = tuple[float, float] | None
"""A reply's first text chunk (seconds after its wave was sent) and its TPOT; None: it failed."""
SPLIT_S = 0.1
"""A wave whose first chunks arrive further apart than this was not prefilled in one batch."""
SENDERS = ("accelbench", "aiperf", "driver", "busy", "cell")


async def _one(session: Any, url: str, body: dict[str, Any], wave_s: float) -> Reply:
    """One streamed request under a new salt: its first chunk and TPOT from its chunks' arrival times."""
    prompt = f"[{secrets.token_hex(16)}] {TEXT}"
    times: list[float] = []
    async with session.post(f"{url}/v1/completions", json={**body, "prompt": prompt}) as reply:
        async for raw in reply.content:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("choices") and chunk["choices"][0].get("text"):
                times.append(time.perf_counter())
    return (times[0] - wave_s, (times[-1] - times[0]) / (len(times) - 1)) if len(times) > 1 else None


async def _driven(
    session: Any, url: str, output_tokens: int, count: Callable[[str], int], wave_s: float
) -> Reply:
    """One request through accelbench's own client (``endpoint.client.send``), accelbench's body."""
    from accelbench.endpoint.client import Prompt, Slot, Target, send

    target = Target(url, served_llm.MODEL_ID, api="completions")
    salt = secrets.token_hex(16)
    prompt = Prompt(salt, (), f"[{salt}] {TEXT}")
    sent = await send(session, target, prompt, output_tokens, Slot(4, 0, "timed", 0.0), count, wave_s)
    chunks = sent.chunk_s
    return (chunks[0], (chunks[-1] - chunks[0]) / (len(chunks) - 1)) if sent.ok and len(chunks) > 1 else None


def _cell(url: str, work: argparse.Namespace, wave: int) -> list[Reply]:
    """The first wave of a whole accelbench run's point at ``work.concurrency`` on the server at ``url``:
    each request's TPOT from its stored chunks (``requests.jsonl``)."""
    out = Path(work.out) / f"cell-{wave}"
    options = {
        "--workloads": served_llm.MODEL_ID,
        "--stacks": "llm@url",
        "--serve-url": url,
        "--concurrency": str(work.concurrency),
        "--endpoint-requests": str(work.concurrency),
        "--output-tokens": str(work.output_tokens),
        "--rules": "quick",
        "--store": str(out / "store"),
        "--endpoint-api": "completions",
    }
    args = [*(part for pair in options.items() for part in pair), "--no-probe", "--json"]
    accelbench_run(args, out, REPO)
    found = [
        json.loads(line)
        for path in (out / "store").rglob("requests.jsonl")
        for line in path.read_text().splitlines()
    ]
    timed = [r for r in found if r["role"] == "timed" and r["concurrency"] == work.concurrency]
    first = sorted(timed, key=lambda r: r["issue_s"])[: work.concurrency]
    sent_s = min((r["send_s"] for r in first), default=0.0)
    return [
        (r["chunk_s"][0] - sent_s, (r["chunk_s"][-1] - r["chunk_s"][0]) / (len(r["chunk_s"]) - 1))
        if r["status"] == "ok" and len(r["chunk_s"]) > 1
        else None
        for r in first
    ]


@contextlib.contextmanager
def _spinning(on: bool) -> Iterator[None]:
    """A process spinning on this process's CPUs while the block runs (``on``), else nothing."""
    if not on:
        yield
        return
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


async def _waves(url: str, work: argparse.Namespace, forced: dict[str, Any]) -> dict[str, list]:
    import aiohttp

    sent = bodies(forced, work.output_tokens)
    count = _counter()
    found: dict[str, list[list[Reply]]] = {name: [] for name in work.senders}
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(timeout=timeout) as pooled:
        for wave in range(work.waves):
            shift = wave % len(work.senders)
            for name in (*work.senders[shift:], *work.senders[:shift]):
                with _spinning(name == "busy"):
                    if name == "cell":
                        found[name].append(await asyncio.to_thread(_cell, url, work, wave))
                    elif name == "driver":
                        found[name].append(await _driver_wave(url, work, count, timeout))
                    else:
                        body = sent["aiperf" if name == "aiperf" else "accelbench"]
                        wave_s = time.perf_counter()
                        sends = [_one(pooled, url, body, wave_s) for _ in range(work.concurrency)]
                        found[name].append(list(await asyncio.gather(*sends)))
    return found


async def _driver_wave(
    url: str, work: argparse.Namespace, count: Callable[[str], int], timeout: Any
) -> list[Reply]:
    """A wave through accelbench's own client on the endpoint driver's connector (a new connection a
    request)."""
    import aiohttp

    connector = aiohttp.TCPConnector(force_close=True, limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as fresh:
        wave_s = time.perf_counter()
        sends = [_driven(fresh, url, work.output_tokens, count, wave_s) for _ in range(work.concurrency)]
        return list(await asyncio.gather(*sends))


def _counter() -> Callable[[str], int]:
    """The reply counter accelbench's driver uses: the model's own tokenizer."""
    from transformers import AutoTokenizer

    from accelbench.endpoint.cell import token_counter

    cache = Path.home() / ".cache" / "accelbench" / "cache"
    return token_counter(AutoTokenizer.from_pretrained(served_llm.model_folder(cache)))


def report(found: dict[str, list[list[Reply]]]) -> None:
    """Each sender's median TPOT [95%], its waves split by the server (first chunks more than
    ``SPLIT_S`` apart: not prefilled in one batch) and its paired ratio to the first sender."""
    for name, waves in found.items():
        values = [r[1] for wave in waves for r in wave if r is not None]
        low, high = median_interval(values)
        median_ms = statistics.median(values) * 1e3
        firsts = [[r[0] for r in wave if r is not None] for wave in waves]
        split = sum(max(f) - min(f) > SPLIT_S for f in firsts if f)
        spread_ms = statistics.median(max(f) - min(f) for f in firsts if f) * 1e3
        print(
            f"{name:10s} TPOT p50 {median_ms:.2f} ms [{low * 1e3:.2f}, {high * 1e3:.2f}] ({len(values)}); "
            f"split waves {split}/{len(waves)}, first-chunk spread p50 {spread_ms:.0f} ms"
        )
    first, *others = found
    for name in others:
        ratios = [
            b / a
            for mine, theirs in zip(found[first], found[name], strict=True)
            for a, b in zip(sorted(r[1] for r in mine if r), sorted(r[1] for r in theirs if r), strict=False)
        ]
        low, high = median_interval(ratios)
        ratio = statistics.median(ratios)
        print(f"paired {name} / {first}: {ratio:.3f} [{low:.3f}, {high:.3f}] ({len(ratios)})")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--waves", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--output-tokens", type=int, default=64)
    parser.add_argument("--senders", default="accelbench,aiperf")
    parser.add_argument("--out", default="/tmp/request-body-tpot")
    args = parser.parse_args(argv)
    args.senders = tuple(dict.fromkeys(s.strip() for s in args.senders.split(",") if s.strip()))
    if min(args.waves, args.concurrency) < 1 or args.output_tokens < 2:
        parser.error("bad input: waves and concurrency must be >= 1, output tokens >= 2")
    if len(args.senders) < 2 or set(args.senders) - set(SENDERS):
        parser.error(f"bad input: --senders takes two or more of {', '.join(SENDERS)}")
    cache = Path.home() / ".cache" / "accelbench" / "cache"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cpus = pin_server(True)
    with served_llm.transformers_serve(cache, out / "transformers-serve.log") as url:
        pin_clients(True, cpus)
        forced = length_body("transformers-cb", {}, args.output_tokens, served_llm.model_folder(cache))
        warm_up(url, served_llm.MODEL_ID, forced)
        report(asyncio.run(_waves(url, args, forced)))


if __name__ == "__main__":
    main()
