"""The smallest cache gain the repeat audit detects, per kind of cache, and its false alarms on honest stacks.

Simulates single-stream trials with a fake clock (no model, no LoadGen): LoadGen's part issues samples
drawn with replacement from a pool of 1024, the audit feed (``accelbench.audits.feed``) slips its probes
in, and a stack answers each call in ``1 ms x noise``, where the noise is log-normal (sigma
``--sigma``) with a share of stalls (``--stall-share`` of calls take 20x longer: a busy machine), in
alternating fast and slow phases (``--drift``: the slow ones that much slower, as these VMs drift). A
cache answers the calls its gate lets through ``gain`` times faster. For each kind of cache and each
gain it prints the share of trials the repeat audit failed; for the honest stack, the share failed
(false alarms) over ``--seeds`` trials. Usage:
``python benchmarks/repeat_sensitivity.py [--seeds 40] [--samples 900] [--sigma 0.15]``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np

from accelbench.audits.feed import AuditFeed
from accelbench.audits.repeat import repeat_verdict

POOL = 1024
Gate = Callable[[int, int], bool]
"""Whether a cache serves an input seen ``count`` times before, last ``since`` calls ago."""
GATES: dict[str, Gate] = {
    "every repeat (k=1)": lambda count, since: True,
    "seen 4+ times": lambda count, since: count >= 4,
    "seen 8+ times": lambda count, since: count >= 8,
    "seen 2-6 times, not in the last 8 calls": lambda count, since: 2 <= count <= 6 and since > 8,
    "not seen in the last 32 calls": lambda count, since: since > 32,
    "seen exactly once": lambda count, since: count == 1,
}
GAINS = (1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0)


class Clock:
    """A fake clock the simulated stack advances."""

    def __init__(self) -> None:
        self.now_s = 0.0

    def __call__(self) -> float:
        return self.now_s


def sample(index: int) -> tuple[np.ndarray, ...]:
    return (np.random.default_rng(index).standard_normal((1, 4)).astype(np.float32),)


def trial(gate: Gate | None, gain: float, seed: int, args: argparse.Namespace) -> str:
    """One simulated trial; the repeat verdict's outcome."""
    clock, noise = Clock(), np.random.default_rng(seed + 7)
    pool = [sample(i) for i in range(POOL)]
    feed = AuditFeed(pool, lambda k: sample(k + 1_000_000), 32, seed, clock=clock, required=(8, 8))
    seen: dict[bytes, tuple[int, int]] = {}
    feed.start_trial(args.samples, args.samples, 1.0)
    issue = np.random.default_rng(seed + 11)
    call = 0
    while call < args.samples or clock() < 1.0:  # LoadGen stops once both minimums are reached
        call += 1
        phase = 1.0 + args.drift * (int(clock() * 20) % 2)  # slow and fast phases of the machine
        index = int(issue.integers(POOL))
        inputs = feed.sample(index)
        key = inputs[0].tobytes()
        count, last = seen.get(key, (0, 0))
        cost_s = 1e-3 * phase * float(noise.lognormal(0.0, args.sigma))
        cost_s *= 20.0 if noise.random() < args.stall_share else 1.0
        if gate is not None and count and gate(count, call - last):
            cost_s /= gain
        seen[key] = (count + 1, call)
        clock.now_s += cost_s
        feed.observe(index, cost_s, None)
    feed.end_trial()
    return repeat_verdict(feed.pairs, seed).outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--samples", type=int, default=900, help="samples per trial")
    parser.add_argument("--sigma", type=float, default=0.15, help="log-normal noise of a call")
    parser.add_argument("--stall-share", type=float, default=0.02, help="share of calls stalled 20x")
    parser.add_argument("--drift", type=float, default=0.5, help="slow phases this much slower (50 ms each)")
    args = parser.parse_args()
    seeds = range(args.seeds)
    honest = [trial(None, 1.0, s, args) for s in range(1000, 1000 + 5 * args.seeds)]
    print(f"honest: {honest.count('fail')} of {len(honest)} trials failed (false alarms), "
          f"{honest.count('inconclusive')} inconclusive")  # fmt: skip
    print(f"{'cache':<42}" + "".join(f"{g:>7g}x" for g in GAINS))
    for name, gate in GATES.items():
        rates = [sum(trial(gate, gain, s, args) == "fail" for s in seeds) / len(seeds) for gain in GAINS]
        print(f"{name:<42}" + "".join(f"{r:>8.0%}" for r in rates))


if __name__ == "__main__":
    main()
