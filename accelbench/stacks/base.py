"""The Stack interface: how a model is executed (framework x compiler x compute platform).

A stack turns the workload's PyTorch module into a ``Session`` whose ``infer`` maps one batch of numpy
inputs to one numpy output. A batch is ``ModelSpec.batch`` samples concatenated on axis 0 of every
input (each sample has batch 1); the output holds one row per sample on axis 0, in the same order. A
stack that cannot run a batch above 1 says why in ``batch_reason`` (the cell is then ``unsupported``).
Adding a stack is one module with a ``Stack`` subclass plus one line in the
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
    """Seed of the model's weights. The inputs a cell times or audits come from another, secret seed
    that no stack sees (``accelbench.cell.seeds``)."""
    variant: str
    input_names: tuple[str, ...]
    example: Inputs
    """One batch of inputs: ``batch`` samples concatenated on axis 0 (compile for these shapes), drawn
    apart from the timed and audit samples."""
    batch: int = 1
    """Samples per ``infer`` call; every call has exactly this many rows (a short batch is padded)."""


@dataclass(frozen=True, slots=True)
class CellContext:
    """Where and how a cell runs."""

    device: str
    threads: int
    work_dir: Path
    """Private scratch folder of this cell."""
    cache_dir: Path
    """Folder shared by the cells of one run (ONNX files, compiler caches)."""
    serve_url: str | None = None
    """A server someone else runs (``--serve-url``), for the ``<stack>@url`` stacks; else None."""
    serve_cluster: str | None = None
    """The Ray cluster the Ray Serve stacks deploy to (``--serve-cluster HOST:PORT|auto``); None: a
    Ray of the cell's own, started on this machine."""


@dataclass(frozen=True, slots=True)
class Session:
    """A prepared model: call ``infer`` per batch (``ModelSpec.batch`` samples). ``details`` are stored
    with the result."""

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
    reads_onnx: ClassVar[bool] = False
    """True when the stack runs the model's ONNX file (``onnx_export.onnx_path``), so it can run a
    user's ONNX file as it is (``accelbench tune``); False when it needs the torch module."""

    def batch_reason(self, workload: str, batch: int) -> str | None:
        """None when ``prepare`` can build a session for ``batch`` samples per call of ``workload``,
        else a one-line reason (asked only for ``batch > 1``)."""
        return None

    def default_batch(self, device: str) -> int:
        """Samples per call of offline and multi-stream cells when ``--batch`` does not fix it."""
        return 1

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
