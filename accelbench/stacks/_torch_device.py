"""What the PyTorch-based stacks share: device strings, placing the model, tensors in and out, precision.

``torch`` is imported inside the functions only, so importing this module costs nothing and a missing
torch surfaces as an "unavailable" reason, never as an import error of the stack module.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from accelbench import errors
from accelbench.stacks.base import CellContext, Stack
from accelbench.workloads.base import Inputs

if TYPE_CHECKING:
    import torch

CUDA_DEFAULT_BATCH = 32
"""Default samples per call on ``cuda*`` devices: NOT measured here (the project machine has no GPU);
GPUs need many rows per kernel to fill their cores, so batch 1 would understate every GPU stack."""
BATCH_MEASURED = """samples/s on this 2-core CPU, bert-base standard, 2 threads, best of 5 interleaved
calls per batch (load average 7.7-9.4 from other work: noisy, read only the trend across one row)

    stack           b1    b4     b8     b16    load
    onnxruntime     2.38  2.55   2.25   2.90   7.7
    openvino        3.43  4.34   3.38   3.63   9.4
    torch-eager     0.24  0.73   0.92   1.51   8.8
    torch-inductor  5.61  14.56  15.65  15.57  3.1

resnet50 standard, same method: onnxruntime 21.41, 20.44, 23.70, 23.78 (load 2.5); the other stacks
were not measured on resnet50.
"""
"""The measurement behind the CPU ``default_batch`` of the stacks."""
_PRECISION_NAMES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}


def split_device(device: str) -> tuple[str, int | None]:
    """``"cuda:1"`` -> ``("cuda", 1)``, ``"cpu"`` -> ``("cpu", None)``; a bad index raises ValueError."""
    kind, _, index = device.partition(":")
    if not index:
        return kind, None
    if not index.isdigit():
        raise ValueError(f"bad device index in {device!r}")
    return kind, int(index)


def device_kind_reason(device: str, devices: tuple[str, ...]) -> str | None:
    """A one-line reason when ``device`` is malformed or of a kind not in ``devices``, else None."""
    try:
        kind, _ = split_device(device)
    except ValueError as exc:
        return str(exc)
    if kind not in devices:
        return f"device kind {kind!r} is not supported (this stack drives {', '.join(devices)})"
    return None


def gpu_default_batch(device: str, cpu_batch: int = 1) -> int:
    """``CUDA_DEFAULT_BATCH`` on ``cuda*`` devices, else ``cpu_batch`` (see ``BATCH_MEASURED``)."""
    return CUDA_DEFAULT_BATCH if device.partition(":")[0] == "cuda" else cpu_batch


def torch_reason(device: str, devices: tuple[str, ...]) -> str | None:
    """Why a torch stack cannot run on ``device`` here: missing torch, unknown kind, no CUDA device."""
    reason = device_kind_reason(device, devices)
    if reason is not None:
        return reason
    reason = import_reason("torch", "accelbench")
    if reason is not None:
        return reason
    kind, index = split_device(device)
    if kind == "cuda":
        return cuda_reason(index or 0)
    return None


def import_reason(package: str, install: str) -> str | None:
    """None when ``package`` imports; else a one-line reason saying what to ``pip install``."""
    try:
        importlib.import_module(package)
    except ModuleNotFoundError:
        return f"{package} not installed (pip install {install})"
    except ImportError as exc:
        return f"{package} does not import: {first_line(exc)} (pip install {install})"
    return None


def cuda_reason(index: int) -> str | None:
    """``"no CUDA device"`` when torch sees none (or not device ``index``), else None."""
    import torch

    if not torch.cuda.is_available():
        return "no CUDA device"
    count = torch.cuda.device_count()
    if index >= count:
        return f"no CUDA device {index} ({count} present)"
    return None


class TorchStack(Stack):
    """A stack that runs the torch module itself on ``cpu`` or ``cuda``; subclasses write ``prepare``."""

    devices: ClassVar[tuple[str, ...]] = ("cpu", "cuda")

    def unavailable_reason(self, device: str) -> str | None:
        """None when torch imports and ``device`` exists; else why not."""
        return torch_reason(device, self.devices)

    def default_batch(self, device: str) -> int:
        """32 on CUDA (not measured here); 1 on CPU unless a subclass measured a gain."""
        return gpu_default_batch(device)

    def versions(self) -> dict[str, str]:
        """The torch version."""
        import torch

        return {"torch": torch.__version__}


def place_model(
    model: torch.nn.Module, ctx: CellContext
) -> tuple[torch.nn.Module, torch.device, dict[str, str]]:
    """Set torch's threads, move ``model`` (eval mode) to the cell's device, keep fp32 strict on CUDA.

    Returns the placed model, the device and the settings to record in ``Session.details``.
    """
    import torch

    torch.set_num_threads(ctx.threads)
    device = torch_device(ctx.device)
    settings = {"threads": str(torch.get_num_threads()), "device": str(device), **strict_fp32(device)}
    return model.to(device).eval(), device, settings


def torch_device(device: str) -> torch.device:
    """The ``torch.device`` for an accelbench device string (``"cuda"`` means ``cuda:0``)."""
    import torch

    kind, index = split_device(device)
    if kind == "cuda":
        return torch.device("cuda", index or 0)
    return torch.device(kind)


def strict_fp32(device: torch.device) -> dict[str, str]:
    """On CUDA, forbid TF32 in matmuls and convolutions so fp32 means fp32; returns the settings."""
    import torch

    if device.type != "cuda":
        return {}
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return {"tf32": "off"}


def precision_of(model: torch.nn.Module) -> str:
    """The effective precision of ``model``: the dtype of its first floating parameter (``fp32`` if none)."""
    for tensor in model.parameters():
        if tensor.is_floating_point():
            name = str(tensor.dtype).removeprefix("torch.")
            return _PRECISION_NAMES.get(name, name)
    return "fp32"


def make_torch_infer(
    module: Callable[..., torch.Tensor], device: torch.device
) -> Callable[[Inputs], np.ndarray]:
    """``infer`` for a torch callable: numpy in, ``inference_mode`` forward, numpy out, synchronised."""
    import torch

    def infer(inputs: Inputs) -> np.ndarray:
        with torch.inference_mode():
            output = module(*(torch.from_numpy(array).to(device) for array in inputs))
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            return output.cpu().numpy()

    return infer


def time_first_call_s(infer: Callable[[Inputs], np.ndarray], inputs: Inputs) -> float:
    """Wall seconds of one call of ``infer`` (the first call compiles or warms caches)."""
    start_s = time.perf_counter()
    infer(inputs)
    return time.perf_counter() - start_s


def first_line(exc: BaseException) -> str:
    """``accelbench.errors.first_line`` of the root cause (a stack's failures come wrapped)."""
    return errors.first_line(exc, root_cause=True)
