"""Memory meters: peak resident memory of the cell process, and peak device memory on GPUs.

- ``peak_rss_bytes``: ``getrusage(RUSAGE_SELF).ru_maxrss``, the high-water mark of the whole cell process
  (model build, reference copy and stack included, not only the timed trials). Linux reports KiB, macOS
  bytes.
- ``DeviceMemoryMeter``: on ``cuda:N``, the peak of PyTorch's CUDA caching allocator over a window
  (``reset_peak_memory_stats`` at ``begin_window``, ``max_memory_allocated`` at ``end_window``). Memory
  allocated outside torch (ONNX Runtime's CUDA provider, TensorRT) is invisible to it; there, NVML's
  used memory at the end of the window is reported instead: whole device, all processes, a sample and not
  a peak; the ``source`` field says which.
"""

from __future__ import annotations

import logging
import resource
import sys
from typing import Any

from accelbench.head import DeviceMemory

log = logging.getLogger(__name__)

TORCH_SOURCE = "torch.cuda.max_memory_allocated over the timed trials"
NVML_SOURCE = "NVML memory used at the end of the timed trials (whole device, all processes; not a peak)"


def peak_rss_bytes() -> int:
    """High-water resident set size of this process in bytes."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


class DeviceMemoryMeter:
    """Peak device memory of named windows; every window on ``cpu`` reads None."""

    def __init__(self, device: str, cuda: Any = None, nvml: Any = None):
        """``cuda`` (a ``torch.cuda``-like module) and ``nvml`` (``pynvml``-like) default to the real ones."""
        self.device = device
        self._cuda, self._nvml = cuda, nvml
        self._open: set[str] = set()

    def begin_window(self, name: str) -> None:
        """Reset torch's peak counter (the peak is global to the process: one window at a time)."""
        if name in self._open:
            raise ValueError(f"memory window {name!r} is already open")
        self._open.add(name)
        cuda = self._torch_cuda()
        if cuda is not None:
            cuda.reset_peak_memory_stats(self.device)

    def end_window(self, name: str) -> DeviceMemory | None:
        """The peak since ``begin_window(name)``, or None on CPU or when nothing can read it."""
        if name not in self._open:
            raise ValueError(f"memory window {name!r} was not begun")
        self._open.discard(name)
        cuda = self._torch_cuda()
        if cuda is not None:
            return DeviceMemory(int(cuda.max_memory_allocated(self.device)), TORCH_SOURCE)
        used = self._nvml_used_bytes()
        return DeviceMemory(used, NVML_SOURCE) if used is not None else None

    def _torch_cuda(self) -> Any:
        if not self.device.startswith("cuda"):
            return None
        cuda = self._cuda
        if cuda is None:
            try:
                import torch
            except ImportError:
                return None
            cuda = torch.cuda
        return cuda if cuda.is_available() and cuda.is_initialized() else None

    def _nvml_used_bytes(self) -> int | None:
        if not self.device.startswith("cuda"):
            return None
        from accelbench.meters.gpu_power import cuda_index

        try:
            nvml = self._nvml if self._nvml is not None else _import_pynvml()
            nvml.nvmlInit()
        except Exception as err:
            log.debug("no NVML for device memory: %s", err)
            return None
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(cuda_index(self.device))
            return int(nvml.nvmlDeviceGetMemoryInfo(handle).used)
        except Exception as err:
            log.debug("NVML memory query failed: %s", err)
            return None
        finally:
            nvml.nvmlShutdown()


def _import_pynvml() -> Any:
    import pynvml

    return pynvml
