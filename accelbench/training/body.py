"""The train-to-quality driver's body of a cell's outcome (``accelbench.outcome``): the ``training``
section."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accelbench.sections import TrainingFigures


@dataclass(frozen=True, slots=True)
class TrainingBody:
    """The train-to-quality driver's part of a cell's outcome: the ``training`` section (module text);
    a training cell has no latency nor LoadGen verdict."""

    training: TrainingFigures

    def to_dict(self) -> dict[str, Any]:
        """The body's keys of the stored document."""
        return {"latency": None, "loadgen": None, "training": self.training.to_dict()}

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> TrainingBody:
        """The body of an outcome document (the head's keys are ignored)."""
        return cls(TrainingFigures.from_dict(document["training"]))
