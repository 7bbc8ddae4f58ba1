"""The audit feed: what each sample LoadGen issues stands for, with audit samples slipped in unseen.

LoadGen hands the SUT only QSL indices; the feed decides which inputs the stack gets for each issued
sample, in issue order (``position``), and keeps what the in-run audits need:

* **repeat probes** (the idea of MLPerf's TEST04, inside the scored run): ``HOT_SAMPLES`` samples are
  shown a drawn number of times (``priming_counts``) in the first ``PRIMING_SHARE`` of the run; then
  one pair of adjacent positions per stratum holds a seen (hot) sample, the one whose sightings are
  nearest a drawn count, and a never-seen (cold) one of the same shapes, in random order; a cold sample
  joins the hot ones once its pair completed. So the pairs probe counts of sightings from 1 to about 12
  at distances from a few calls to hundreds (``docs/audits.md``). The latency of both members is kept
  (``Pair``), with the floor of the never-seen calls (timed samples' first sightings, cold members).
* **output checks** (the idea of TEST01 over the whole run): in each stratum of the run, a run of
  ``CHECK_RUN`` adjacent positions keeps copies of the outputs with the identity of their inputs
  (``Check``). Adjacent checks let the output check tell a stale output (the answer to an input issued
  one or two queries earlier) from a wrong one.

Strata are in units of the trial's *progress*, which reaches 1 when LoadGen ends the run: for offline,
the position in its one query of known size; for the other scenarios, the smaller of position /
minimum query count and elapsed time / minimum duration (LoadGen stops once both are reached). So the
events spread over the whole run however fast or slow the machine turns, and nothing depends on an
estimate of the run's length. Events fire at the first free position past their drawn progress target,
from a seed the stack never sees (``secrets`` in the cell, recorded afterwards). The priming goes by the
count alone, and the events the audits need at the least (``required``) are placed by the positions
LoadGen guarantees once those run short (``AuditFeed._fire``), so a clock that leaps in a few long
stalls cannot leave an audit without its minimum. A fast run gets more pairs (``pairs_for``), so that a
cache switching on late still leaves enough pairs after it. Audit inputs are none of the timed, warm-up
or calibration samples (``accelbench.cell.samples``).

**Batches.** When the stack is called with ``batch`` samples at a time (offline, multi-stream), a
latency belongs to a whole batch, so the repeat probes work in whole batches: each of the
``HOT_SAMPLES`` hot *groups* holds ``batch`` samples, a priming shows a whole group in one batch, and a
pair is a batch of a primed group beside a batch of ``batch`` never-seen samples. Priming and pairs
start only at positions that are multiples of ``batch`` (the SUT cuts batches there). With batch 1 this
is the design above. The SUT may ask for a whole batch of samples before it observes any of them:
``sample`` and ``observe`` each keep their own cursor, and must be called in the same order.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence

import numpy as np

from accelbench.audits.hot_groups import HotGroups, shapes
from accelbench.audits.probes import HOT_SAMPLES, Check, Event, Origin, Pair, TrialState, novel_floor
from accelbench.audits.traffic import TrafficPairs
from accelbench.workloads.base import Inputs

PAIRS = 16
"""Pairs per cell at the least, shared out over its trials."""
MAX_PAIRS_FACTOR = 4
"""A run expected to issue many samples gets up to this many times its share of pairs."""
SAMPLES_PER_PAIR = 16
"""A trial expected to issue N samples gets N / SAMPLES_PER_PAIR pairs (within the bounds above)."""
PRIMING_SHARE = 0.3
"""Share of the run's progress in which the hot samples are primed; the pairs fill the rest."""
LAST_TARGET = 0.97
"""No event is aimed past this progress (LoadGen may stop right at 1)."""
CHECK_RUN = 3
"""Adjacent checked positions per stratum: the last one's two predecessors are checked too."""
EVENT_SHARE = 0.5
"""Audit inputs (priming, pairs) take at most about this share of a trial's positions."""


class AuditFeed:
    """The inputs of every issued sample, and the observations of the in-run audits."""

    def __init__(
        self,
        pool: Sequence[Inputs],
        make_audit_sample: Callable[[int], Inputs],
        checks_per_trial: int,
        seed: int,
        pairs_per_trial: int = PAIRS,
        clock: Callable[[], float] = time.perf_counter,
        batch: int = 1,
        required: tuple[int, int] | None = None,
    ) -> None:
        """``pool``: the timed samples (QSL order); ``make_audit_sample(k)``: audit input k, never timed;
        ``batch``: samples per stack call (priming and pairs then fill whole batches); ``required``: the
        pairs and checks per trial that its audits need at the least (default: none; the cell passes
        ``repeat.MIN_PAIRS`` and ``output.MIN_CHECKS`` shared out over its trials)."""
        self.pool = pool
        self.batch = batch
        self.make_audit_sample = make_audit_sample
        self.checks_per_trial = checks_per_trial
        self.pairs_per_trial = pairs_per_trial
        pairs_needed, checks_needed = required or (0, 0)
        self.required = {
            "pair": min(pairs_needed, pairs_per_trial),
            "check": math.ceil(checks_needed / CHECK_RUN),
        }
        """Pairs and check runs a trial must hold for its audits to conclude (``_behind``)."""
        self.seed = seed
        self.clock = clock
        self.rng = np.random.default_rng(seed)
        self.groups = HotGroups(make_audit_sample, batch, self.rng)
        """The repeat probes' hot and cold groups (the priming counts: the generator's first draw)."""
        self.seen_pool: set[int] = set()
        self.novel_s: dict[tuple[tuple[int, ...], ...], list[float]] = {}
        """Latencies of never-seen inputs (timed samples' first sightings, cold members), by shapes."""
        self.traffic = TrafficPairs(batch, np.random.default_rng([seed, 1]))
        """Pairs of adjacent timed calls with more and fewer seen rows (``accelbench.audits.traffic``)."""
        self.pairs: list[Pair] = []
        self.checks: list[Check] = []
        self.trial: TrialState | None = None
        self.trials = 0

    def minimum_samples(self) -> int:
        """Samples the next trial must issue: audit inputs take at most ``EVENT_SHARE`` of them, and the
        checks (which replace no input) fit in the rest."""
        priming = self.groups.priming_left()
        substituted = (priming + 2 * self.pairs_per_trial) * self.batch
        checks = CHECK_RUN * self._check_runs()
        return max(int(substituted / EVENT_SHARE), substituted + checks) + CHECK_RUN + self.batch

    def pairs_for(self, expected_samples: int) -> int:
        """Pairs of a trial expected to issue ``expected_samples``."""
        wanted = expected_samples // (SAMPLES_PER_PAIR * self.batch)
        return int(min(max(wanted, self.pairs_per_trial), MAX_PAIRS_FACTOR * self.pairs_per_trial))

    def start_trial(self, guaranteed_samples: int, expected_samples: int, duration_s: float = 0.0) -> None:
        """Draw the next trial's targets. LoadGen issues at least ``guaranteed_samples`` and runs at
        least ``duration_s`` (0 for offline, whose one query has exactly ``guaranteed_samples``)."""
        pairs = self.pairs_for(expected_samples)
        order = self.rng.permutation(HOT_SAMPLES)
        new = (self.groups.new_cold_group(int(order[slot % HOT_SAMPLES])) for slot in range(pairs))
        cold = [g for g in new if g is not None]
        priming = self.groups.priming_left()
        begin = PRIMING_SHARE if priming else 0.0
        targets = {
            "prime": self._targets(priming, 0.0, PRIMING_SHARE),
            "pair": self._targets(len(cold), begin, LAST_TARGET),
            "check": self._targets(self._check_runs(), 0.0, LAST_TARGET),
        }
        guaranteed = max(1, guaranteed_samples)
        planned = {kind: len(found) for kind, found in targets.items()}
        self.trial = TrialState(
            self.trials,
            guaranteed,
            duration_s,
            self.clock(),
            targets,
            cold=cold[::-1],
            planned=planned,
            placed=dict.fromkeys(targets, 0),
        )
        self.trials += 1

    def sample(self, index: int) -> Inputs:
        """The inputs for the next issued sample, whose QSL index is ``index``."""
        trial = self._current()
        if trial.issued not in trial.events:
            self._fire(trial)
        origin = self._origin(trial, trial.issued, index)
        trial.issued += 1
        return self.audit_input(origin)

    def observe(self, index: int, latency_s: float, output: np.ndarray | None) -> None:
        """Record the completed sample (call after ``sample`` and the inference, in the same order);
        in a batch, ``latency_s`` is the batch's and ``output`` this sample's row."""
        trial = self._current()
        event = trial.events.get(trial.position)
        if event is not None and event.kind == "check" and output is not None:
            copy = np.array(output, copy=True)
            origin = self._origin(trial, trial.position, index)
            self.checks.append(Check(trial.number, trial.position, origin, copy))
        elif event is not None and event.kind in ("hot", "cold") and event.number % self.batch == 0:
            self._observe_member(trial, event, latency_s)  # once per member: its batch's first row
        if event is None or event.kind == "check":
            novel = index not in self.seen_pool
            shape = shapes(self.pool[index])
            self.traffic.row(trial.number, trial.position, index, novel, latency_s, shape)
            self.seen_pool.add(index)
            if novel and self.batch == 1:  # a timed sample's first sighting: computed whatever the stack
                self.novel_s.setdefault(shape, []).append(latency_s)
        trial.position += 1

    def end_trial(self) -> None:
        """Give the trial's pairs their floor (``Pair.novel_floor_s``) and forget the trial (half-observed
        pairs are dropped)."""
        number = self._current().number
        floors = {shapes: novel_floor(seen) for shapes, seen in self.novel_s.items()}
        self.pairs = [
            dataclasses.replace(p, novel_floor_s=floors[self.groups.shapes_of(p.hot_group)])
            if p.trial == number
            else p
            for p in self.pairs
        ]
        self.pairs.extend(self.traffic.pairs)
        self.traffic.pairs.clear()
        self.trial = None

    def audit_input(self, origin: Origin) -> Inputs:
        """The inputs an origin names."""
        kind, number = origin
        return self.pool[number] if kind == "pool" else self.groups.sample(kind, number)

    def _current(self) -> TrialState:
        if self.trial is None:
            raise RuntimeError("AuditFeed.start_trial was not called")
        return self.trial

    def _progress(self, trial: TrialState) -> float:
        by_count = trial.issued / trial.guaranteed
        if trial.duration_s <= 0:
            return by_count
        return min(by_count, (self.clock() - trial.started_s) / trial.duration_s)

    def _fire(self, trial: TrialState) -> None:
        """Place the most urgent event whose target has passed at this position (at most one).

        Priming goes by the count of issued samples alone (it is done early whatever the clock does) and
        first (a pair counts only once its hot group is primed); then whichever of a check and a pair is
        furthest behind its plan (when behind: its requirement). Substituted inputs (priming, pairs) never
        take more than about half of the run (``EVENT_SHARE``); checks replace no input and are never held
        back. Once the events the audits need at the least (``required``) only just fit in the positions
        LoadGen still guarantees, they fire whatever the progress (``_behind``): a run whose clock ran
        ahead in a few long stalls and then ends on its query count still holds them. The others keep
        their targets, so in a long run they still spread over its whole length.
        """
        start, size = trial.issued, self.batch
        behind = self._behind(trial)
        crowded = not behind and trial.substituted > EVENT_SHARE * start + 2 * size
        kinds = ("check",) if crowded or start % size else ("prime", "check", "pair")
        progress = self._progress(trial)
        reached = {kind: progress for kind in kinds}
        if "prime" in reached:
            reached["prime"] = trial.issued / trial.guaranteed
        for kind in behind:
            reached[kind] = math.inf
        due = [k for k in kinds if trial.targets[k] and trial.targets[k][-1] <= reached[k]]
        if not due:
            return
        plan = self.required if behind else trial.planned
        kind = "prime" if "prime" in due else min(due, key=lambda k: trial.placed[k] / max(1, plan[k]))
        trial.targets[kind].pop()
        trial.placed[kind] += 1
        if kind == "prime":
            group = self.groups.least_primed()
            for k in range(size):
                trial.events[start + k] = Event("hot", group * size + k)
            trial.substituted += size
        elif kind == "pair" and trial.cold:
            cold = trial.cold.pop()
            group = self.groups.hot_for(cold)
            hot = [Event("hot", group * size + k, start) for k in range(size)]
            fresh = [Event("cold", cold * size + k, start) for k in range(size)]
            members = [*fresh, *hot] if self.rng.random() < 0.5 else [*hot, *fresh]
            for k, member in enumerate(members):
                trial.events[start + k] = member
            trial.substituted += 2 * size
        elif kind == "check":
            for k in range(CHECK_RUN):
                trial.events.setdefault(start + k, Event("check"))

    def _behind(self, trial: TrialState) -> tuple[str, ...]:
        """The kinds whose required events still to place (priming included) need every position that
        LoadGen still guarantees, with a check run and a batch of slack; () while there is room."""
        left = trial.guaranteed - trial.issued
        if left <= 0:
            return ()  # past the guaranteed count the run ends on its clock: the targets decide
        short = {k: max(0, self.required[k] - trial.placed[k]) for k in ("pair", "check")}
        short = {k: min(n, len(trial.targets[k])) for k, n in short.items()}
        if not any(short.values()):
            return ()
        needed = (len(trial.targets["prime"]) + 2 * short["pair"]) * self.batch + CHECK_RUN * short["check"]
        if needed + CHECK_RUN + self.batch < left:
            return ()
        return ("prime", *(k for k, n in short.items() if n))

    def _origin(self, trial: TrialState, position: int, index: int) -> Origin:
        event = trial.events.get(position)
        if event is None or event.kind == "check":
            return ("pool", index)
        return (event.kind, event.number)

    def _observe_member(self, trial: TrialState, event: Event, latency_s: float) -> None:
        """Count a hot group's sighting; keep a pair once both members completed, if its group was primed
        (called once per member: at the first row of its batch)."""
        previous = (-1, -1)
        if event.kind == "cold":
            self.novel_s.setdefault(shapes(self.groups.cold[event.number]), []).append(latency_s)
        if event.kind == "hot":
            previous = self.groups.seen(event.number // self.batch, (trial.number, trial.position))
        if event.pair_start < 0:  # a priming sighting
            return
        if event.kind == "hot":
            trial.pending_last[event.pair_start] = previous[1] if previous[0] == trial.number else -1
        first = trial.pending.pop(event.pair_start, None)
        if first is None:
            trial.pending[event.pair_start] = latency_s
            return
        leader = trial.events[event.pair_start]
        hot = leader if leader.kind == "hot" else event
        hot_s, cold_s = (first, latency_s) if leader.kind == "hot" else (latency_s, first)
        seen_before = self.groups.sightings[hot.number // self.batch] - 1
        last = trial.pending_last.pop(event.pair_start, -1)
        group = hot.number // self.batch
        if seen_before >= 1:
            pair = Pair(
                trial=trial.number,
                position=event.pair_start,
                hot_s=hot_s,
                cold_s=cold_s,
                hot_sightings=seen_before,
                hot_last_position=last,
                hot_group=group,
                shape_class=self.groups.shape_class[group],
            )
            self.pairs.append(pair)
        cold = event if event.kind == "cold" else leader
        self.groups.recycle(cold.number // self.batch, (trial.number, event.pair_start))

    def _check_runs(self) -> int:
        return max(1, math.ceil(self.checks_per_trial / CHECK_RUN))

    def _targets(self, count: int, low: float, high: float) -> list[float]:
        """``count`` stratified random progress targets in [low, high), soonest last (a stack to pop)."""
        if count <= 0:
            return []
        width = (high - low) / count
        return sorted((low + (i + float(self.rng.random())) * width for i in range(count)), reverse=True)
