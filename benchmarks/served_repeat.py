"""The served repeat audit inside the curve (issue 40 item 5): false alarms, margins, cost, cheats.

One ``transformers serve`` (continuous batching) of tiny-llama on loopback; each run, interleaved:

* A (before): the curve with no pairs in it, then the old audit: 6 seen/unseen pairs at concurrency 1
  after the curve (the first point's texts seen again), judged by the same rule;
* B (now): the curve with the pairs inside its points (``accelbench.endpoint.cell.ladder``).

Prints per run the verdicts and their evidence (median ratio, faster share, hits, lowest ratio of a
seen reply to its partner and point), the seconds and requests the audit cost (A: its requests after
the curve; B: the curve's time and requests against A's curve), and over all runs the honest pairs'
ratio distribution against the bars. With ``--planted MODE,...`` each run also sends B through each
planted proxy (``tests/e2e/planted_endpoints.py``) right after an honest proxy, and prints its verdict,
its cache hits and its best point's tokens/s against the honest proxy's.

    python benchmarks/served_repeat.py --runs 10 --concurrency 1,2,4,8 --requests 8 --output-tokens 16
"""

from __future__ import annotations

import argparse
import math
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from accelbench.audits.verdict import Verdict  # noqa: E402
from accelbench.endpoint import repeat  # noqa: E402
from accelbench.endpoint.cell import Climbed, ladder, token_counter  # noqa: E402
from accelbench.endpoint.client import Target  # noqa: E402
from accelbench.endpoint.driver import Load, run_point  # noqa: E402
from accelbench.endpoint.figures import Bounds  # noqa: E402
from accelbench.endpoint.prompts import seeded_texts  # noqa: E402
from accelbench.endpoint.servers import ServerSettings, TransformersCbServer  # noqa: E402
from accelbench.endpoint.settings import EndpointSettings  # noqa: E402
from accelbench.generation.models import load_model  # noqa: E402
from accelbench.generation.workload import TinyLlama  # noqa: E402

UNBOUNDED = Bounds(math.inf, math.inf)


@dataclass(frozen=True, slots=True)
class Setup:
    """What every run sends to: the server, the tokenizer and the curve's settings."""

    target: Target
    tokenizer: Any
    settings: EndpointSettings
    point_gap_s: float = 0.05


def _climb(setup: Setup, target: Target | None = None, seed: int = 0) -> tuple[Climbed, float]:
    started = time.perf_counter()
    count = token_counter(setup.tokenizer)
    seed = seed or secrets.randbits(63)
    where = target or setup.target
    climbed = ladder(where, setup.tokenizer, seed, setup.settings, TinyLlama.lengths, count, UNBOUNDED)
    return climbed, time.perf_counter() - started


def before(setup: Setup) -> tuple[Verdict, float, float, int]:
    """The curve with no pairs, then the old audit after it: its verdict, the curve's seconds, the
    audit's seconds and requests."""
    seed = secrets.randbits(63)
    with mock.patch.object(repeat, "PAIRS", 0):
        _, curve_s = _climb(setup, seed=seed)
    count = token_counter(setup.tokenizer)
    first = setup.settings.ladder[0]
    texts = seeded_texts(seed, TinyLlama.lengths, setup.settings.requests_at(first), "point", first)
    pairs = repeat.make_pairs(setup.tokenizer, seed, texts[: repeat.PAIRS], count, 99)
    prompts = [prompt for pair in pairs for prompt, _ in pair.ordered()]
    parts = [part for pair in pairs for _, part in pair.ordered()]
    started = time.perf_counter()
    load = Load(1, setup.settings.max_tokens)
    audited = repeat.tagged(run_point(setup.target, prompts, load, count), parts)
    return repeat.repeat_verdict(audited), curve_s, time.perf_counter() - started, len(audited)


def _said(verdict: Verdict) -> str:
    e = verdict.evidence
    if not e:
        return f"{verdict.outcome:12s} {verdict.reason}"
    hits = f" hits {e.get('hits')} lowest {e.get('lowest')}" if "hits" in e else ""
    return (
        f"{verdict.outcome:5s} ratio {e['ratio']:.3f} faster {e['faster_share']:.2f} pairs {e['pairs']}{hits}"
    )


def _best(climbed: Climbed) -> float:
    return max(p.output_tokens_per_s for p in climbed.curve)


def planted(setup: Setup, modes: Sequence[str]) -> None:
    """Each planted mode right after an honest proxy: verdict, hits, best tokens/s against honest."""
    from tests.e2e import planted_endpoints
    from tests.e2e.planted_endpoints import planted_endpoint

    planted_endpoints.POINT_GAP_S = setup.point_gap_s  # the proxies' idea of a pause between points

    for mode in modes:
        best = {}
        for name in ("honest", mode):
            with planted_endpoint(setup.target.url, name) as proxy:
                target = Target(proxy.url, setup.target.model)
                climbed, _ = _climb(setup, target)
                verdict = repeat.repeat_verdict(climbed.records)
                best[name] = _best(climbed)
                state = proxy.state
                seen = f"replayed {state.cache_hits}, points seen {state.points}"
                print(f"  {name:12s} {_said(verdict)}; {seen}, best point {best[name]:.1f} tok/s", flush=True)
        print(f"  {mode}: best point x{best[mode] / best['honest']:.3f} of the honest proxy's", flush=True)


def _print_lows(lows: Sequence[float]) -> None:
    ordered = sorted(lows)
    spread = (
        f"lowest {ordered[0]:.3f}, p5 {ordered[len(ordered) // 20]:.3f}, median {statistics.median(lows):.3f}"
    )
    margin = f"bar {repeat.HIT_RATIO}: margin x{ordered[0] / repeat.HIT_RATIO:.1f}"
    print(
        f"honest pairs {len(lows)}: seen / min(partner, point median), TTFT or per token: {spread}; {margin}"
    )


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--concurrency", default="1,2,4,8")
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--output-tokens", type=int, default=16)
    parser.add_argument("--planted", default="", help="planted proxy modes to run beside, comma-separated")
    parser.add_argument("--point-gap-s", type=float, default=0.05, help="the planted proxies' pause")
    args = parser.parse_args(argv)
    ladder_asked = tuple(int(c) for c in args.concurrency.split(","))
    settings = EndpointSettings(ladder=ladder_asked, requests=args.requests, max_tokens=args.output_tokens)
    with tempfile.TemporaryDirectory() as folder:
        model = load_model("tiny-llama", Path(folder) / "cache")
        from transformers import AutoTokenizer

        server = TransformersCbServer()
        url, model_id = server.start(model.folder, Path(folder), ServerSettings(max(ladder_asked), 64, 1))
        try:
            tokenizer = AutoTokenizer.from_pretrained(model.folder)
            setup = Setup(Target(url, model_id), tokenizer, settings, args.point_gap_s)
            _climb(setup)  # warm the server
            lows: list[float] = []
            for run in range(args.runs):
                old, old_curve_s, audit_s, audit_requests = before(setup)
                climbed, curve_s = _climb(setup)
                verdict = repeat.repeat_verdict(climbed.records)
                lows += repeat.pair_lows(climbed.records)
                members = sum(bool(r.repeat) for r in climbed.records)
                then = f"curve {old_curve_s:.2f} s + audit {audit_s:.2f} s ({audit_requests} requests)"
                now = f"curve {curve_s:.2f} s ({members} of {len(climbed.records)} requests are pairs)"
                print(f"run {run}: before {_said(old)}; {then} | now {_said(verdict)}; {now}", flush=True)
                if args.planted:
                    planted(setup, args.planted.split(","))
            if lows:
                _print_lows(lows)
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
