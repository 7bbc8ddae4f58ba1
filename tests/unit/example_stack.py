"""A new stack, written as ``docs/adding-a-stack.md`` says: the worked example its count is checked on.

``example-numpy`` runs a model made of ``torch.nn.Linear`` and ``torch.nn.ReLU`` layers in a row (a
``torch.nn.Sequential``, such as the worked example workload ``example-mlp``) as NumPy matrix products, its
weights read out of the module once in ``prepare``; any other model is ``Unsupported``. What a developer
writes for it is this module and one line in ``accelbench.registry.STACKS`` (``test_adding_a_stack`` adds
it). It needs no optional package, so it takes no extra in ``pyproject.toml``. The process it runs in, the
inputs, LoadGen, the audits, the quality gate and the store are the harness's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from accelbench.errors import Unsupported
from accelbench.stacks._torch_device import device_kind_reason
from accelbench.stacks.base import CellContext, ModelSpec, Session, Stack
from accelbench.workloads.base import Inputs

if TYPE_CHECKING:
    import torch

Layer = Callable[[np.ndarray], np.ndarray]


class ExampleNumpy(Stack):
    """Linear and ReLU layers as NumPy products, fp32, on the CPU's BLAS with the cell's threads."""

    name: ClassVar[str] = "example-numpy"
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "PyTorch (weights read out)",
        "compiler": "none",
        "platform": "NumPy (BLAS) on CPU",
    }
    devices: ClassVar[tuple[str, ...]] = ("cpu",)

    def unavailable_reason(self, device: str) -> str | None:
        """None on ``cpu`` (NumPy is a dependency of accelbench); a reason for any other device kind."""
        return device_kind_reason(device, self.devices)

    def versions(self) -> dict[str, str]:
        """The one library it computes with."""
        return {"numpy": np.__version__}

    def prepare(self, model: torch.nn.Module, spec: ModelSpec, ctx: CellContext) -> Session:
        """The module's layers as NumPy functions; BLAS limited to ``ctx.threads`` in this process."""
        from threadpoolctl import threadpool_limits

        started = time.perf_counter()
        steps = numpy_layers(model)
        threadpool_limits(limits=ctx.threads, user_api="blas")

        def infer(inputs: Inputs) -> np.ndarray:
            (rows,) = inputs
            for step in steps:  # every call computes: nothing is kept between calls
                rows = step(rows)
            return rows

        names = ",".join(type(layer).__name__ for layer in model.children())
        return Session(
            infer=infer,
            effective_precision="fp32",
            compile_s=time.perf_counter() - started,
            details={"threads": str(ctx.threads), "layers": names},
        )


def numpy_layers(model: torch.nn.Module) -> list[Layer]:
    """One NumPy function per layer of ``model``; Unsupported naming the first layer it cannot run."""
    import torch

    steps: list[Layer] = []
    for layer in model.children() if isinstance(model, torch.nn.Sequential) else (model,):
        if isinstance(layer, torch.nn.Linear):
            steps.append(_linear(layer))
        elif isinstance(layer, torch.nn.ReLU):
            steps.append(lambda rows: np.maximum(rows, np.float32(0)))
        else:
            raise Unsupported(
                f"example-numpy runs Linear and ReLU layers in a row, not {type(layer).__name__}"
            )
    return steps


def _linear(layer: torch.nn.Linear) -> Layer:
    weight_t = np.ascontiguousarray(layer.weight.detach().numpy().T)
    bias = layer.bias.detach().numpy().copy() if layer.bias is not None else np.float32(0)
    return lambda rows: rows @ weight_t + bias
