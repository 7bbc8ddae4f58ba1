"""AMD GPU energy through amdsmi (ROCm's ``amdsmi`` Python package), when it imports.

UNTESTED on AMD hardware: this project has had no AMD GPU; the calls follow amdsmi's documented Python
API and are exercised only against a fake module. ``amdsmi_get_energy_count`` returns an accumulator and
its resolution (microjoules per tick; the key is ``energy_accumulator`` since amdsmi 6.2.1, ``power``
before); where it fails, ``amdsmi_get_power_info`` (watts) is polled. ROCm builds of PyTorch call AMD GPUs
``cuda:N``, so ``cuda:N`` is taken as amdsmi's N-th GPU handle (``HIP_VISIBLE_DEVICES`` is not applied).
Some wheels ship without ``libamd_smi.so`` and raise KeyError on import, hence the broad except.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Unpack

from accelbench.meters.energy_base import MeterUnavailable
from accelbench.meters.gpu_power import GpuMeter, GpuOptions, Readers, cuda_index, open_gpu_meter

log = logging.getLogger(__name__)


def amd_meter(device: str, **options: Unpack[GpuOptions]) -> GpuMeter:
    """A meter of ``cuda:N`` on an AMD GPU; MeterUnavailable when amdsmi or the GPU is missing."""
    smi = _import_amdsmi()
    return open_gpu_meter(
        "amdsmi", "amdsmi", device, lambda: _readers(smi, device), lambda: smi.amdsmi_shut_down(), options
    )


def _import_amdsmi() -> Any:
    try:
        import amdsmi
    except Exception as err:  # KeyError when the wheel lacks its shared library
        raise MeterUnavailable(f"amdsmi not importable: {type(err).__name__}: {err}") from err
    return amdsmi


def _readers(smi: Any, device: str) -> Readers:
    smi.amdsmi_init()
    handle = smi.amdsmi_get_processor_handles()[cuda_index(device)]
    return lambda: _power_w(smi, handle), _energy_reader(smi, handle)


def _energy_j(smi: Any, handle: Any) -> float:
    counts = smi.amdsmi_get_energy_count(handle)
    ticks = counts["energy_accumulator"] if "energy_accumulator" in counts else counts["power"]
    return float(ticks) * float(counts["counter_resolution"]) / 1e6


def _energy_reader(smi: Any, handle: Any) -> Callable[[], float] | None:
    try:
        _energy_j(smi, handle)
    except Exception as err:
        log.info("no amdsmi energy counter (%s): polling power instead", err)
        return None
    return lambda: _energy_j(smi, handle)


def _power_w(smi: Any, handle: Any) -> float:
    info = smi.amdsmi_get_power_info(handle)
    for key in ("current_socket_power", "average_socket_power"):
        value = info.get(key)
        if isinstance(value, (int, float)):
            return float(value)
    raise RuntimeError(f"amdsmi power info without a numeric socket power: {sorted(info)}")
