"""The ``train-to-quality`` driver's settings (``accelbench.training.measure``): its knobs, declared here
(``accelbench.knobs``).

``training`` sits below ``config`` in the layers, so the record reads the run's configuration through
``Configured``: the one attribute of ``accelbench.config.RunConfig`` it needs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Protocol

from accelbench.inputs import range_problem
from accelbench.knobs import Knobs, knob
from accelbench.settings import KnobsAlone, knob_values


class Configured(Protocol):
    """The run configuration a training cell's settings are built from (``RunConfig`` is one)."""

    @property
    def knobs(self) -> Knobs: ...


def _at_least_one(name: str) -> Callable[[Any], str | None]:
    """The check of ``runs`` and ``nproc``: at least 1, within their stated range (``inputs.RANGES``)."""

    def problem(value: Any) -> str | None:
        if isinstance(value, int) and value < 1:
            return "runs and nproc must be at least 1"
        return range_problem(name, value)

    return problem


@dataclass(frozen=True, slots=True)
class TrainingSettings(KnobsAlone):
    """How a training cell is run (``accelbench.settings``)."""

    driver: ClassVar[str] = "train-to-quality"

    runs: int = knob(
        5, flag="--runs", help="train-to-quality: timed runs per cell (5).", check=_at_least_one("runs")
    )
    """Timed runs to the target (the olympic mean drops the fastest and slowest)."""
    nproc: int = knob(
        1, flag="--nproc", help="train-to-quality: data-parallel processes.", check=_at_least_one("nproc")
    )
    """Data-parallel processes (torch.distributed)."""

    @classmethod
    def from_config(cls, config: Configured) -> TrainingSettings:
        """The settings the run ``config`` asks for."""
        return cls(**knob_values(cls, config))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainingSettings:
        """Inverse of ``to_dict``."""
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form."""
        return asdict(self)
