"""The Stack interface: how a model is executed (framework x compiler x compute platform).

A stack turns the workload's PyTorch module into a ``Session`` whose ``infer`` maps one sample's numpy
inputs to one numpy output. Adding a stack is one module with a ``Stack`` subclass plus one line in the
stack table of ``accelbench.registry``. Heavy libraries are imported inside ``unavailable_reason`` and
``prepare`` only, so a missing one makes the stack "unavailable: <reason>", never a crash.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from accelbench.workloads.base import Inputs

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """What a stack needs to know about the model besides the module itself."""

    workload: str
    size: str
    seed: int
    variant: str
    input_names: tuple[str, ...]
    example: Inputs


@dataclass(frozen=True, slots=True)
class CellContext:
    """Where and how a cell runs."""

    device: str
    threads: int
    work_dir: Path
    """Private scratch folder of this cell."""
    cache_dir: Path
    """Folder shared by the cells of one run (ONNX files, compiler caches)."""


@dataclass(frozen=True, slots=True)
class Session:
    """A prepared model: call ``infer`` per sample. ``details`` are stored with the result."""

    infer: Callable[[Inputs], np.ndarray]
    effective_precision: str
    compile_s: float
    details: Mapping[str, str] = field(default_factory=dict)


class Stack(ABC):
    """A way to execute a model; subclasses are registered by name in ``accelbench.registry``."""

    name: ClassVar[str]
    layers: ClassVar[Mapping[str, str]]
    """Which of the five layers this stack exercises: keys ``framework``, ``compiler``, ``platform``."""
    devices: ClassVar[tuple[str, ...]] = ("cpu",)
    """Device kinds it can drive (``cpu``, ``cuda``)."""
    computes: ClassVar[bool] = True
    """False only for the null stack: its outputs are not the model's, so the quality gate is skipped."""

    @abstractmethod
    def unavailable_reason(self, device: str) -> str | None:
        """None when the stack can run on ``device`` here, else a one-line reason."""

    @abstractmethod
    def versions(self) -> dict[str, str]:
        """Versions of the libraries this stack uses (called only when available)."""

    @abstractmethod
    def prepare(self, model: torch.nn.Module, spec: ModelSpec, ctx: CellContext) -> Session:
        """Compile/convert ``model`` and return a ready session; raise Unsupported when it cannot.

        Stacks with ``computes = False`` (the null stack) are given ``None``: the model is not built.
        """
