"""Stacks named by the project's seed that cannot run on this machine: listed, with the reason, never run.

Each says which layers it would exercise and why it is unavailable, so ``accelbench list stacks`` shows
the whole landscape rather than silently leaving these out. ``prepare`` always raises Unavailable.
nvFuser is the exception that can become available: on a CUDA machine where torch sees a GPU and the
``nvfuser`` package imports, its reason clears, but no model-level runner is wired up yet (nvFuser is
reached through lightning-thunder for torch 2.x), so ``prepare`` still says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from accelbench.errors import Unavailable
from accelbench.stacks._torch_device import device_kind_reason, import_reason, torch_reason
from accelbench.stacks.base import CellContext, ModelSpec, Session, Stack

if TYPE_CHECKING:
    import torch


class SeedStack(Stack):
    """A stack that is only listed: ``reason`` is why it cannot run here."""

    reason: ClassVar[str]
    devices: ClassVar[tuple[str, ...]] = ("cpu", "cuda")

    def unavailable_reason(self, device: str) -> str | None:
        """The fixed reason (or the device-kind reason for a malformed device)."""
        return device_kind_reason(device, self.devices) or self.reason

    def versions(self) -> dict[str, str]:
        """Nothing is installed."""
        return {}

    def prepare(self, model: torch.nn.Module, spec: ModelSpec, ctx: CellContext) -> Session:
        """Always Unavailable, with the stack's reason."""
        raise Unavailable(f"{self.name}: {self.unavailable_reason(ctx.device) or self.reason}")


class Glow(SeedStack):
    """Glow (PyTorch's graph-lowering NN compiler), used through torch_glow."""

    name: ClassVar[str] = "glow"
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "PyTorch (torch_glow)",
        "compiler": "Glow (graph lowering, LLVM)",
        "platform": "CPU (LLVM); accelerator backends",
    }
    reason: ClassVar[str] = (
        "pytorch/glow is archived and ships no Python wheel (torch_glow needs a source build against an old "
        "torch; the PyPI package 'glow' is unrelated)"
    )


class PlaidMl(SeedStack):
    """PlaidML (Tile language compiler behind a Keras backend)."""

    name: ClassVar[str] = "plaidml"
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "Keras 2 (plaidml-keras)",
        "compiler": "PlaidML (Tile / Stripe)",
        "platform": "OpenCL, Metal, LLVM CPU",
    }
    reason: ClassVar[str] = (
        "PlaidML is archived (last release 0.7.0, January 2020); its wheel requires enum34, which shadows "
        "the standard enum module and breaks Python 3.11, and plaidml-keras needs Keras 2.2.4"
    )


class OneFlow(SeedStack):
    """OneFlow (a PyTorch-like framework with its own graph compiler)."""

    name: ClassVar[str] = "oneflow"
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "OneFlow (PyTorch-like API)",
        "compiler": "OneFlow nn.Graph (MLIR passes)",
        "platform": "CPU, CUDA",
    }
    reason: ClassVar[str] = (
        "PyPI's only OneFlow wheel for this Python is a placeholder (oneflow 0.7.0 raises 'This package is "
        "a placeholder' on import); real builds come from OneFlow's own package index, per CUDA version"
    )


class NvFuser(SeedStack):
    """nvFuser (NVIDIA's fusion code generator for PyTorch programs)."""

    name: ClassVar[str] = "nvfuser"
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "PyTorch",
        "compiler": "nvFuser (fusion code generator)",
        "platform": "CUDA only",
    }
    reason: ClassVar[str] = "nvFuser is GPU-only"
    devices: ClassVar[tuple[str, ...]] = ("cuda",)

    def unavailable_reason(self, device: str) -> str | None:
        """None only on a CUDA device that torch sees, with ``nvfuser`` importable."""
        if device.partition(":")[0] == "cpu":
            cuda = torch_reason("cuda", self.devices)
            return f"{self.reason} ({cuda})" if cuda else f"{self.reason}: run it on a cuda device"
        return torch_reason(device, self.devices) or import_reason(
            "nvfuser", "nvfuser-cu130 (matching torch)"
        )

    def prepare(self, model: torch.nn.Module, spec: ModelSpec, ctx: CellContext) -> Session:
        """Unavailable: nothing drives a whole model through nvFuser yet (lightning-thunder would)."""
        reason = self.unavailable_reason(ctx.device)
        if reason is None:
            reason = (
                "no model-level nvFuser runner is wired up (torch 2.x reaches nvFuser via lightning-thunder)"
            )
        raise Unavailable(f"nvfuser: {reason}")
