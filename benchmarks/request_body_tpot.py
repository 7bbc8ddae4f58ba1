"""Does the request body alone change a server's decode speed? Two bodies, wave by wave, on one server.

Stop 63 found AIPerf's TPOT 5% below accelbench's at c=4 on one ``transformers serve`` (pinned, 6 rounds
each way round, paired [0.930, 0.958]), already in the first wave of four requests sent at once on an
idle server, with the same load in flight. The two clients' bodies differ: accelbench's ``llm@url``
sends ``temperature: 0.0`` and no ``generation_config`` (the server then takes the model's own config,
its EOS id included, per request), AIPerf the benchmark's ``generation_config`` (every special token
suppressed, no EOS id). This sends waves of ``--concurrency`` requests at once, the same prompts
(salted anew per request: nothing to cache) under body ``accelbench`` or ``aiperf``, in the order
A B B A A B ..., and prints each body's TPOT per request (last chunk - first chunk) / (chunks - 1), its
median with a 95% interval, and the paired ratio (the k-th request of a wave against the k-th of the
other body's wave next to it).

Usage: ``python benchmarks/request_body_tpot.py [--waves 16] [--concurrency 4] [--output-tokens 64]``
(the server on the first CPU, this client on the others, as ``llm_endpoint_agreement.py --pin``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

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


async def _one(session: Any, url: str, body: dict[str, Any]) -> float | None:
    """One streamed request under a new salt: its TPOT from its chunks' arrival times."""
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
    return (times[-1] - times[0]) / (len(times) - 1) if len(times) > 1 else None


async def _waves(url: str, sent: dict[str, dict[str, Any]], waves: int, concurrency: int) -> dict[str, list]:
    import aiohttp

    found: dict[str, list[list[float | None]]] = {name: [] for name in sent}
    order = [("accelbench", "aiperf"), ("aiperf", "accelbench")]
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as session:
        for wave in range(waves):
            for name in order[wave % 2]:
                found[name].append(
                    list(await asyncio.gather(*(_one(session, url, sent[name]) for _ in range(concurrency))))
                )
    return found


def report(found: dict[str, list[list[float | None]]]) -> None:
    """Each body's median TPOT [95%] and the paired ratio aiperf / accelbench."""
    for name, waves in found.items():
        values = [v for wave in waves for v in wave if v is not None]
        low, high = median_interval(values)
        median_ms = statistics.median(values) * 1e3
        print(f"{name:10s} TPOT p50 {median_ms:.2f} ms [{low * 1e3:.2f}, {high * 1e3:.2f}] ({len(values)})")
    ratios = [
        b / a
        for mine, theirs in zip(found["accelbench"], found["aiperf"], strict=True)
        for a, b in zip(sorted(v for v in mine if v), sorted(v for v in theirs if v), strict=False)
    ]
    low, high = median_interval(ratios)
    print(
        f"paired aiperf / accelbench: {statistics.median(ratios):.3f} [{low:.3f}, {high:.3f}] ({len(ratios)})"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--waves", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--output-tokens", type=int, default=64)
    parser.add_argument("--out", default="/tmp/request-body-tpot")
    args = parser.parse_args(argv)
    if min(args.waves, args.concurrency) < 1 or args.output_tokens < 2:
        parser.error("bad input: waves and concurrency must be >= 1, output tokens >= 2")
    cache = Path.home() / ".cache" / "accelbench" / "cache"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cpus = pin_server(True)
    with served_llm.transformers_serve(cache, out / "transformers-serve.log") as url:
        pin_clients(True, cpus)
        forced = length_body("transformers-cb", {}, args.output_tokens, served_llm.model_folder(cache))
        warm_up(url, served_llm.MODEL_ID, forced)
        report(asyncio.run(_waves(url, bodies(forced, args.output_tokens), args.waves, args.concurrency)))


if __name__ == "__main__":
    main()
