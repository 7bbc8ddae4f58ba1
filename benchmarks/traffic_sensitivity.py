"""The timed traffic's pairs (``accelbench.audits.traffic``): the smallest cache gain they detect, and
their false alarms on honest stacks on three kinds of machine.

Simulates long single-stream trials with a fake clock (no model, no LoadGen): ``--samples`` calls drawn
with replacement from a pool of 256 (most calls repeat, as offline on a fast model), the audit feed's
probes slipped in. The cheat is ``planted-traffic-cache`` (``tests/e2e/planted_traffic.py``: it serves
the traffic's repeats and computes anything that looks like a probe), serving a share ``--shares`` of
the repeats it would serve, each ``gain`` times cheaper than the call. The machines:

* ``quiet``: a call takes 1 ms x (1 + 30% jitter);
* ``loaded``: 95% of the calls are preempted 1-40 ms (CI's loaded 2-core VM);
* ``fading``: a quarter of the calls start an interference of 1-4 ms that fades by 15% a call, so the
  first of two adjacent calls is decisively faster more often than the second (the order effect seen
  on real cells: 60-67% of decisive adjacent pairs).

For each machine it prints the share of honest trials failed (false alarms) and, for each gain and
share, the share of cheating trials failed. Usage (from the repository root):
``python benchmarks/traffic_sensitivity.py [--seeds 20] [--samples 4500]``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accelbench.audits.feed import AuditFeed
from accelbench.audits.repeat import repeat_verdict
from accelbench.audits.verdict import FAIL
from tests.e2e.planted_traffic import _TrafficCache

POOL = 256
Inputs = tuple[np.ndarray, ...]
Infer = Callable[[Inputs], np.ndarray]
WEIGHTS = np.random.default_rng(0).standard_normal((8, 10))


class Clock:
    def __init__(self) -> None:
        self.now_s = 0.0

    def __call__(self) -> float:
        return self.now_s


def sample(index: int) -> Inputs:
    return (np.random.default_rng(index).standard_normal((1, 8)).astype(np.float32),)


def machine(kind: str, clock: Clock, seed: int) -> Callable[[float], None]:
    """Advances the clock by a call of ``work_s`` on the machine ``kind``."""
    jitter, rng = np.random.default_rng(seed), np.random.default_rng(seed + 77)
    extra = [0.0]

    def run(work_s: float) -> None:
        clock.now_s += work_s * (1 + 0.3 * jitter.random())
        if kind == "loaded" and rng.random() < 0.95:
            clock.now_s += 1e-3 * float(rng.uniform(1, 40))
        if kind == "fading":
            extra[0] = extra[0] * 0.85 + (1e-3 * float(rng.uniform(1, 4)) if rng.random() < 0.25 else 0.0)
            clock.now_s += extra[0]

    return run


def stack(kind: str, clock: Clock, seed: int, gain: float | None, share: float) -> Infer:
    """Honest (``gain`` None), or the traffic cache whose served calls cost 1 ms / ``gain``."""
    run = machine(kind, clock, seed)

    def compute(inputs: Inputs) -> np.ndarray:
        run(1e-3)
        return (inputs[0].astype(np.float64) @ WEIGHTS).astype(np.float32)

    if gain is None:
        return compute
    cache = _TrafficCache(compute, POOL)
    pick = np.random.default_rng(seed + 5)

    def infer(inputs: Inputs) -> np.ndarray:
        key = b"".join(array.tobytes() for array in inputs)
        if key in cache.cache and pick.random() >= share:
            cache.cache.pop(key)  # this repeat is computed: the cache forgets it first
        before = clock.now_s
        output = cache(inputs)
        if clock.now_s == before:  # served: a cheaper call, not a free one
            run(1e-3 / gain)
        return np.asarray(output)

    return infer


def trial(kind: str, seed: int, gain: float | None, share: float, samples: int) -> bool:
    """One simulated trial: whether the repeat audit failed it."""
    clock = Clock()
    pool = [sample(i) for i in range(POOL)]
    feed = AuditFeed(pool, lambda k: sample(k + 10_000), 32, seed, clock=clock)
    infer = stack(kind, clock, seed, gain, share)
    feed.start_trial(samples, samples, 1.0)
    issue = np.random.default_rng(9 + seed)
    for _ in range(samples):
        index = int(issue.integers(POOL))
        inputs = feed.sample(index)
        begin = clock()
        output = infer(inputs)
        feed.observe(index, clock() - begin, output)
    feed.end_trial()
    return repeat_verdict(feed.pairs).outcome == FAIL


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--samples", type=int, default=4500)
    parser.add_argument("--gains", default="1.25,1.5,2,5")
    parser.add_argument("--shares", default="1,0.5")
    args = parser.parse_args()
    gains = [float(g) for g in args.gains.split(",")]
    shares = [float(s) for s in args.shares.split(",")]
    columns = ["honest"] + [f"{g:g}x, {s:.0%}" for g in gains for s in shares]
    print(f"share of {args.seeds} trials failed ({args.samples} calls, pool {POOL}); cheat: gain, served")
    print("| machine | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for kind in ("quiet", "loaded", "fading"):
        cells = [sum(trial(kind, seed, None, 1.0, args.samples) for seed in range(args.seeds))]
        for gain in gains:
            for share in shares:
                cells.append(sum(trial(kind, seed, gain, share, args.samples) for seed in range(args.seeds)))
        print(f"| {kind} | " + " | ".join(f"{c}/{args.seeds}" for c in cells) + " |", flush=True)


if __name__ == "__main__":
    main()
