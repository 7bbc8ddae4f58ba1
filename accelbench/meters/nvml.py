"""NVIDIA GPU energy through NVML (the ``nvidia-ml-py`` package, imported as ``pynvml``).

``nvmlDeviceGetTotalEnergyConsumption`` gives millijoules since the driver loaded (Volta and newer); where
it raises NVMLError (older GPUs, some vGPUs) the meter polls ``nvmlDeviceGetPowerUsage`` (milliwatts)
instead. ``cuda:N`` is the framework's numbering: with ``CUDA_VISIBLE_DEVICES`` set, entry N of it names
the NVML device (an index or a ``GPU-`` UUID; MIG slices have no energy counter and are refused). The
counter covers the whole board: other processes on the same GPU are in the figure.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from typing import Any, Unpack

from accelbench.meters.energy_base import MeterUnavailable
from accelbench.meters.gpu_power import GpuMeter, GpuOptions, Readers, cuda_index, open_gpu_meter

log = logging.getLogger(__name__)


def nvml_meter(
    device: str, *, environ: Mapping[str, str] = os.environ, **options: Unpack[GpuOptions]
) -> GpuMeter:
    """A meter of ``cuda:N`` through NVML; MeterUnavailable when pynvml, the driver or the GPU is missing."""
    nvml = _import_pynvml()
    try:
        nvml.nvmlInit()
    except Exception as err:
        raise MeterUnavailable(f"NVML does not initialise: {err}") from err
    return open_gpu_meter(
        "nvml", "NVML", device, lambda: _readers(nvml, device, environ), lambda: nvml.nvmlShutdown(), options
    )


def _import_pynvml() -> Any:
    try:
        import pynvml
    except ImportError as err:
        raise MeterUnavailable(f"pynvml not importable (install nvidia-ml-py): {err}") from err
    return pynvml


def _handle(nvml: Any, device: str, environ: Mapping[str, str]) -> Any:
    index = cuda_index(device)
    visible = [v.strip() for v in environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if not visible:
        return nvml.nvmlDeviceGetHandleByIndex(index)
    entry = visible[index]
    if entry.isdigit():
        return nvml.nvmlDeviceGetHandleByIndex(int(entry))
    if entry.startswith("GPU-"):
        return nvml.nvmlDeviceGetHandleByUUID(entry)
    raise ValueError(f"CUDA_VISIBLE_DEVICES entry {entry!r} (MIG slices have no energy counter)")


def _readers(nvml: Any, device: str, environ: Mapping[str, str]) -> Readers:
    handle = _handle(nvml, device, environ)
    return lambda: nvml.nvmlDeviceGetPowerUsage(handle) / 1e3, _energy_reader(nvml, handle)


def _energy_reader(nvml: Any, handle: Any) -> Callable[[], float] | None:
    """Joules from the total-energy counter, or None when this GPU has none (then power is polled)."""
    try:
        nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    except nvml.NVMLError as err:
        log.info("no NVML energy counter (%s): polling power instead", err)
        return None
    return lambda: nvml.nvmlDeviceGetTotalEnergyConsumption(handle) / 1e3
