"""Memory meters: the process's peak RSS and peak device memory (against a fake torch.cuda and NVML)."""

# ruff: noqa: N802 - the fakes mirror pynvml's camelCase function names

from __future__ import annotations

import resource
import types
from typing import Any

from accelbench.head import DeviceMemory
from accelbench.meters.memory import NVML_SOURCE, TORCH_SOURCE, DeviceMemoryMeter, peak_rss_bytes


def test_peak_rss_is_getrusage_in_bytes() -> None:
    peak = peak_rss_bytes()
    assert peak == resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    assert 10 * 2**20 < peak < 64 * 2**30  # a Python process with numpy loaded, not KiB or GiB by mistake


class FakeCuda:
    """The part of torch.cuda the meter calls."""

    def __init__(self, available: bool = True, peak_bytes: int = 0):
        self.available, self.peak_bytes = available, peak_bytes
        self.resets: list[str] = []

    def is_available(self) -> bool:
        return self.available

    def is_initialized(self) -> bool:
        return self.available

    def reset_peak_memory_stats(self, device: str) -> None:
        self.resets.append(device)

    def max_memory_allocated(self, device: str) -> int:
        return self.peak_bytes


class FakeNvml(types.ModuleType):
    def __init__(self, used_bytes: int):
        super().__init__("pynvml")
        self.used_bytes, self.shutdowns = used_bytes, 0

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> Any:
        return types.SimpleNamespace(used=self.used_bytes)


def test_cpu_has_no_device_memory() -> None:
    meter = DeviceMemoryMeter("cpu", cuda=FakeCuda(), nvml=FakeNvml(1))
    meter.begin_window("w")
    assert meter.end_window("w") is None


def test_torch_peak_is_reset_at_window_start() -> None:
    cuda = FakeCuda(peak_bytes=3 * 2**30)
    meter = DeviceMemoryMeter("cuda:1", cuda=cuda)
    meter.begin_window("w")
    assert cuda.resets == ["cuda:1"]
    assert meter.end_window("w") == DeviceMemory(3 * 2**30, TORCH_SOURCE)


def test_nvml_used_memory_when_torch_has_no_cuda() -> None:
    nvml = FakeNvml(used_bytes=5 * 2**30)
    meter = DeviceMemoryMeter("cuda:0", cuda=FakeCuda(available=False), nvml=nvml)
    meter.begin_window("w")
    assert meter.end_window("w") == DeviceMemory(5 * 2**30, NVML_SOURCE)
    assert nvml.shutdowns == 1
