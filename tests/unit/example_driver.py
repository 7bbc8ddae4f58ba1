"""A new cell driver, written as ``docs/adding-a-driver.md`` says: the worked example its count is checked on.

``wall-clock`` times a cell's stack on one batch, ``calls`` times (a knob of its own, ``--wall-clock-calls``),
and stores the calls' latency. What a developer writes for it, and nothing else:

1. its module: the driver function ``measure`` and its body ``WallClockBody`` (this file's second half);
2. its settings record ``WallClockSettings`` with its knob (this file's first half; a module of its own in
   the package);
3. its rows in ``accelbench/registry.py``: ``DRIVERS``, ``SETTINGS``, ``BODIES`` (``test_adding_a_driver``
   adds them, as the diff in the doc does);
4. the ``driver`` line of the workloads it measures (``WallClockMiniLM``; a plugin workload here, as a
   vendor's package would add it through the ``accelbench.workloads`` entry-point group).

It stores the existing ``latency`` section, so no schema change (the doc's "+5"). It runs no audit, so
its cells say ``unverified``: a driver judges its own cells, and a figure no audit saw never ranks.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from accelbench import registry
from accelbench.cellspec import CellSpec
from accelbench.config import RunConfig
from accelbench.head import Head
from accelbench.knobs import knob
from accelbench.loadgen_figures import Latency
from accelbench.outcome import Outcome
from accelbench.settings import KnobsAlone, expect, knob_values
from accelbench.stacks.base import CellContext, ModelSpec
from accelbench.workloads.minilm import MiniLM

NAME = "wall-clock"
NO_AUDIT = "the wall-clock driver runs no audit: its latency is shown, never ranked"


def _calls_problem(value: int) -> str | None:
    return None if 2 <= value <= 1000 else f"wall-clock calls must be from 2 to 1000, got {value}"


@dataclass(frozen=True, slots=True)
class WallClockSettings(KnobsAlone):
    """The ``wall-clock`` driver's settings: how many calls it times."""

    driver: ClassVar[str] = NAME

    calls: int = knob(
        8, flag="--wall-clock-calls", help="wall-clock: timed calls per cell (8).", check=_calls_problem
    )

    @classmethod
    def from_config(cls, config: RunConfig) -> WallClockSettings:
        """The settings the run ``config`` asks for: every knob field, as the run sets it."""
        return cls(**knob_values(cls, config))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WallClockSettings:
        """Inverse of ``to_dict``."""
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form."""
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True)
class WallClockBody:
    """The driver's part of the outcome: the calls' latency (``Result.latency``, stored as ``latency``)."""

    latency: Latency

    def to_dict(self) -> dict[str, Any]:
        """The body's keys of the stored document."""
        return {"latency": dataclasses.asdict(self.latency)}

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> WallClockBody:
        """The body of an outcome document (the head's keys are ignored)."""
        latency = dict(document["latency"])
        return cls(Latency(**{**latency, "median_ci_s": tuple(latency["median_ci_s"])}))


def measure(spec: CellSpec) -> Outcome:
    """Prepare the cell's stack on its workload's model and time ``calls`` calls on one sample."""
    settings = expect(spec.settings, WallClockSettings)
    workload = registry.instantiate(spec.refs.workload)
    stack = registry.instantiate(spec.refs.stack)
    size, seed = spec.cell.size, spec.seed
    example = workload.make_sample(size, seed, 0)
    model_spec = ModelSpec(spec.cell.workload, size, seed, "canonical", workload.input_names(), example)
    context = CellContext(
        spec.cell.device, spec.threads, Path(spec.folders.cell_dir), Path(spec.folders.cache_dir)
    )
    Path(spec.folders.cell_dir).mkdir(parents=True, exist_ok=True)
    session = stack.prepare(workload.build_model(size, seed), model_spec, context)
    times_s = []
    for _ in range(settings.calls):
        start = time.perf_counter()
        session.infer(example)
        times_s.append(time.perf_counter() - start)
    ordered = sorted(times_s)
    latency = Latency(
        p50_s=statistics.median(ordered),
        p90_s=float(np.quantile(ordered, 0.9)),
        p99_s=float(np.quantile(ordered, 0.99)),
        mean_s=statistics.fmean(ordered),
        min_s=ordered[0],
        median_ci_s=(ordered[0], ordered[-1]),
        samples=len(ordered),
    )
    head = Head(
        status="unverified",
        reason=NO_AUDIT,
        effective_precision=session.effective_precision,
        versions=stack.versions(),
        settings={"threads": spec.threads, "calls": settings.calls},
    )
    return Outcome(head, WallClockBody(latency))


class WallClockMiniLM(MiniLM):
    """MiniLM measured by the ``wall-clock`` driver (the workload's ``driver`` line)."""

    name: ClassVar[str] = "wall-clock-minilm"
    driver: ClassVar[str] = NAME
    scenarios: ClassVar[tuple[str, ...]] = ("single-stream",)
