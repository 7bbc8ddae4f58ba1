"""The ``train-to-quality`` driver's settings (``accelbench.training.measure``).

``training`` sits below ``config`` in the layers, so the record reads the run's configuration through
``Knobs``: the two attributes of ``accelbench.config.RunConfig`` it needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Protocol


class Knobs(Protocol):
    """The run configuration's knobs a training cell reads (``RunConfig`` has them)."""

    @property
    def runs(self) -> int: ...

    @property
    def nproc(self) -> int: ...


@dataclass(frozen=True, slots=True)
class TrainingSettings:
    """How a training cell is run (``accelbench.settings``)."""

    driver: ClassVar[str] = "train-to-quality"

    runs: int = 5
    """Timed runs to the target (``--runs``; the olympic mean drops the fastest and slowest)."""
    nproc: int = 1
    """Data-parallel processes (``--nproc``; torch.distributed)."""

    @classmethod
    def from_config(cls, config: Knobs) -> TrainingSettings:
        """The settings the run ``config`` asks for."""
        return cls(runs=config.runs, nproc=config.nproc)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainingSettings:
        """Inverse of ``to_dict``."""
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form."""
        return asdict(self)
