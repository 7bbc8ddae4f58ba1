"""The records of the audit feed (``accelbench.audits.feed``): its pairs and checks, what a position
holds, a trial's state, how often the hot samples are primed, and the floor of never-seen calls."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

HOT_SAMPLES = 4
"""Hot groups (of ``batch`` samples each; one sample at batch 1)."""
PRIMING_SIGHTINGS = 10
"""The most sightings a hot group gets before its pairs (``priming_counts``): the pairs then probe
caches that wait for any count from 1 to 10 sightings (and beyond, as each pair adds one)."""

Origin = tuple[str, int]
"""Where an input came from: ``("pool", qsl index)``, ``("hot", j)`` or ``("cold", k)``."""


@dataclass(frozen=True, slots=True)
class Pair:
    """One repeat probe: a primed hot sample and a never-seen cold one, at adjacent positions."""

    trial: int
    position: int
    hot_s: float
    cold_s: float
    hot_sightings: int
    """How often the hot sample had been seen before this probe."""
    hot_last_position: int = -1
    """Position of the hot sample's previous sighting in this trial (-1: in an earlier one)."""
    hot_group: int = -1
    """Which hot group of the trial the hot member showed."""
    shape_class: int = 0
    """The trial's class of input shapes of both members (pairs of one class are comparable)."""
    novel_floor_s: float = math.inf
    """A low latency of the calls of the trial's never-seen inputs of the hot member's shapes (the
    first sightings of timed samples, at batch 1, and the cold members): ``novel_floor``."""
    traffic: bool = False
    """A pair of two adjacent timed calls, not of audit inputs (``accelbench.audits.traffic``): the hot
    member is the one with more seen rows (``hot_sightings`` of them), ``hot_group`` its first sample's
    pool index."""
    hot_first: bool = False
    """The hot member came first (recorded for traffic pairs)."""
    order: bool = False
    """A decisive order pair of ``accelbench.audits.traffic``: two adjacent timed calls of the same seen
    rows, ``hot_s`` the first one's latency, ``cold_s`` the second's (the machine's order effect)."""


@dataclass(frozen=True, slots=True)
class Check:
    """An output captured for the output check, with the identity of its input."""

    trial: int
    position: int
    origin: Origin
    output: np.ndarray


@dataclass(frozen=True, slots=True)
class Event:
    """What a position holds: a hot or cold pair member (with its pair's start), a priming or a check."""

    kind: str
    number: int = 0
    pair_start: int = -1


@dataclass(slots=True)
class TrialState:
    number: int
    guaranteed: int
    duration_s: float
    started_s: float
    targets: dict[str, list[float]]
    """Progress targets still to fire, by kind (``prime``, ``pair``, ``check``), soonest last."""
    events: dict[int, Event] = field(default_factory=dict)
    position: int = 0
    """Samples observed so far (the observation cursor)."""
    issued: int = 0
    """Samples handed out by ``sample`` so far (the issue cursor, at most a batch ahead)."""
    pending: dict[int, float] = field(default_factory=dict)
    """Latency of the first member of a pair, by pair start, until the second completes."""
    pending_last: dict[int, int] = field(default_factory=dict)
    """Position of the previous sighting of a pair's hot member (-1: another trial), by pair start."""
    cold: list[int] = field(default_factory=list)
    """Cold samples drawn for this trial and not used yet."""
    substituted: int = 0
    """Positions given audit inputs so far (priming and pairs)."""
    planned: dict[str, int] = field(default_factory=dict)
    """Events drawn at the start, by kind."""
    placed: dict[str, int] = field(default_factory=dict)
    """Events placed so far, by kind."""


def priming_counts(rng: np.random.Generator) -> list[int]:
    """Sightings of each hot group before its pairs: one group in each equal band of
    1..``PRIMING_SIGHTINGS`` (1-3, 3-5, 6-8, 8-10 with four groups), drawn in the band, in random order."""
    band = PRIMING_SIGHTINGS / HOT_SAMPLES
    counts = [1 + int((g + rng.random()) * band) for g in range(HOT_SAMPLES)]
    return [counts[int(g)] for g in rng.permutation(HOT_SAMPLES)]


FLOOR_POISON_SHARE = 1 / 50
"""Share of the never-seen calls ``novel_floor`` passes over (a stack answering a few never-seen inputs
at once, with garbage the output checks may miss, cannot drag the floor down)."""


def novel_floor(latencies_s: Sequence[float]) -> float:
    """The ``1 + n * FLOOR_POISON_SHARE``-th smallest of ``n`` latencies of never-seen inputs."""
    if not latencies_s:
        return math.inf
    return sorted(latencies_s)[int(len(latencies_s) * FLOOR_POISON_SHARE)]
