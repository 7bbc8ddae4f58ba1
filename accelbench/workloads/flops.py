"""The cost of one forward pass of a workload at a size: FLOPs, bytes moved, arithmetic intensity.

* FLOPs: ``torch.utils.flop_counter.FlopCounterMode`` over one batch-1 forward pass, which counts
  matmuls, convolutions and attention kernels with a multiply-add as 2 FLOPs. Elementwise work
  (norms, activations, softmax, residual adds) is not counted: it is a few percent of these models.
* Bytes: an estimate of memory traffic in fp32 without fusion or cache reuse: every parameter and
  buffer the pass uses, read once (of an embedding table only the gathered rows), plus every
  activation each non-view aten op reads or writes. Fused compilers move less, so the roofline bound
  this gives for memory-bound models is a conservative (high) one.

Costs depend only on the workload's shapes, so they are cached per (workload, size) in one small JSON
file, ``COST_CACHE_FILE``, inside the cache folder the caller gives. torch is imported lazily, so
``WorkloadCost`` can be used without it.

Stored form (``WorkloadCost.to_dict``) history (bump ``COST_SCHEMA_VERSION`` on every change):
    1  first format: workload, size, flops, bytes_moved, arithmetic_intensity, method, state_bytes,
       activation_bytes, flops_by_op, schema_version.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accelbench.files import check_schema_version, read_json

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

COST_SCHEMA_VERSION = 1
COST_CACHE_FILE = "workload_costs.json"
METHOD = (
    "flops: torch.utils.flop_counter.FlopCounterMode, one batch-1 forward pass, multiply-add = 2 FLOPs, "
    "matmul/conv/attention only; bytes: parameters and buffers used, read once (embeddings: gathered "
    "rows), plus the activations every non-view aten op reads and writes, fp32, no fusion or cache reuse"
)

_NO_COPY_OPS = frozenset({"aten._unsafe_view", "aten._reshape_alias", "aten.lift_fresh"})
"""Ops whose schema does not mark them as views although they move no data."""


@dataclass(frozen=True, slots=True)
class WorkloadCost:
    """FLOPs and bytes of one batch-1 forward pass of a workload at a size."""

    workload: str
    size: str
    flops: int
    bytes_moved: int
    """``state_bytes + activation_bytes``."""
    arithmetic_intensity: float
    """FLOPs per byte moved."""
    method: str
    state_bytes: int = 0
    """Parameters and buffers the pass reads, each once."""
    activation_bytes: int = 0
    flops_by_op: Mapping[str, int] = field(default_factory=dict)
    schema_version: int = COST_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """The stored JSON document."""
        doc = dataclasses.asdict(self)
        doc["flops_by_op"] = dict(self.flops_by_op)
        return doc

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> WorkloadCost:
        """Rebuild from ``to_dict``'s document; raises ValueError on another schema version."""
        check_schema_version(doc, (COST_SCHEMA_VERSION,), "cost")
        return cls(**{**doc, "flops_by_op": dict(doc.get("flops_by_op", {}))})


def model_cost(
    model: torch.nn.Module, inputs: tuple[Any, ...], workload: str = "", size: str = ""
) -> WorkloadCost:
    """Count one forward pass of ``model`` on ``inputs`` (numpy arrays or tensors, batch included)."""
    import torch

    tensors = tuple(torch.as_tensor(x) for x in inputs)
    flops_by_op = count_flops(model, tensors)
    state_bytes, activation_bytes = count_bytes(model, tensors)
    flops = sum(flops_by_op.values())
    return cost_of(workload, size, flops, state_bytes, activation_bytes, METHOD, flops_by_op)


def cost_of(
    workload: str,
    size: str,
    flops: int,
    state_bytes: int,
    activation_bytes: int,
    method: str,
    flops_by_op: Mapping[str, int] | None = None,
) -> WorkloadCost:
    """A cost record from its counts: bytes moved = state + activations, intensity = FLOPs / bytes."""
    moved = state_bytes + activation_bytes
    return WorkloadCost(
        workload=workload,
        size=size,
        flops=flops,
        bytes_moved=moved,
        arithmetic_intensity=flops / moved if moved else 0.0,
        method=method,
        state_bytes=state_bytes,
        activation_bytes=activation_bytes,
        flops_by_op=dict(flops_by_op or {}),
    )


def count_flops(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> dict[str, int]:
    """FLOPs per aten op (``FlopCounterMode``'s registry: mm, addmm, bmm, convolution, attention)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(*inputs)
    return {str(op): int(count) for op, count in counter.get_flop_counts().get("Global", {}).items()}


def count_bytes(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> tuple[int, int]:
    """``(state_bytes, activation_bytes)`` of one forward pass (see the module docstring)."""
    import torch

    state = {_storage(t): t.untyped_storage().nbytes() for t in (*model.parameters(), *model.buffers())}
    mode = _traffic_mode(state)
    with torch.no_grad(), mode:
        model(*inputs)
    used = sum(state[pointer] for pointer in mode.state_used) + mode.gathered_bytes
    return used, mode.activation_bytes


def _storage(tensor: torch.Tensor) -> int:
    return int(tensor.untyped_storage().data_ptr())


def _traffic_mode(state: Mapping[int, int]) -> Any:
    """A dispatch mode that adds up the bytes every non-view op reads and writes."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    class TrafficMode(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.state_used: set[int] = set()
            self.gathered_bytes = 0
            self.activation_bytes = 0

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            if getattr(func, "is_view", False) or str(func._overloadpacket) in _NO_COPY_OPS:
                return out
            read = _tensors(tree_leaves((args, kwargs)))
            written = sum(_nbytes(t) for t in _tensors(tree_leaves(out)))
            if func._overloadpacket is torch.ops.aten.embedding:  # the table: only the rows gathered
                read, self.gathered_bytes = read[1:], self.gathered_bytes + written
            for tensor in read:
                if _storage(tensor) in state:
                    self.state_used.add(_storage(tensor))
                else:
                    self.activation_bytes += _nbytes(tensor)
            self.activation_bytes += written
            return out

    return TrafficMode()


def _tensors(leaves: list[Any]) -> list[torch.Tensor]:
    import torch

    return [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]


def _nbytes(tensor: torch.Tensor) -> int:
    return int(tensor.numel() * tensor.element_size())


def read_cost_cache(cache_dir: Path) -> dict[str, Any]:
    path = cache_dir / COST_CACHE_FILE
    try:
        document = read_json(path, "cost cache", finite=False)
    except (OSError, ValueError):
        return {}
    if document.get("schema_version") != COST_SCHEMA_VERSION:
        return {}
    entries: dict[str, Any] = document.get("costs", {})
    return entries


def write_cost_cache(cache_dir: Path, key: str, cost: WorkloadCost) -> None:
    """Add ``cost`` under ``key``; the file is replaced atomically (last writer wins on a race)."""
    entries = read_cost_cache(cache_dir)
    entries[key] = cost.to_dict()
    cache_dir.mkdir(parents=True, exist_ok=True)
    document = {"schema_version": COST_SCHEMA_VERSION, "costs": entries}
    with tempfile.NamedTemporaryFile("w", dir=cache_dir, suffix=".tmp", delete=False) as handle:
        json.dump(document, handle, indent=1, sort_keys=True)
    os.replace(handle.name, cache_dir / COST_CACHE_FILE)
