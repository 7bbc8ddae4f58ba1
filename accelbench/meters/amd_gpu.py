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
import time
from collections.abc import Callable
from typing import Any

from accelbench.meters.energy import MeterUnavailable
from accelbench.meters.gpu_power import IDLE_S, POLL_S, GpuMeter
from accelbench.meters.nvml import cuda_index

log = logging.getLogger(__name__)


def amd_meter(
    device: str,
    *,
    sync: Callable[[], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    idle_s: float = IDLE_S,
    poll_s: float | None = POLL_S,
    subtract_idle: bool = False,
) -> GpuMeter:
    """A meter of ``cuda:N`` on an AMD GPU; MeterUnavailable when amdsmi or the GPU is missing."""
    smi = _import_amdsmi()
    try:
        smi.amdsmi_init()
        handle = smi.amdsmi_get_processor_handles()[cuda_index(device)]
    except Exception as err:
        _shutdown(smi)
        raise MeterUnavailable(f"amdsmi has no usable {device}: {err}") from err
    return GpuMeter(
        "amdsmi",
        f"gpu{cuda_index(device)}",
        lambda: _power_w(smi, handle),
        _energy_reader(smi, handle),
        sync=sync,
        clock=clock,
        sleep=sleep,
        idle_s=idle_s,
        poll_s=poll_s,
        subtract_idle=subtract_idle,
        close=lambda: _shutdown(smi),
    )


def _import_amdsmi() -> Any:
    try:
        import amdsmi
    except Exception as err:  # KeyError when the wheel lacks its shared library
        raise MeterUnavailable(f"amdsmi not importable: {type(err).__name__}: {err}") from err
    return amdsmi


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


def _shutdown(smi: Any) -> None:
    try:
        smi.amdsmi_shut_down()
    except Exception as err:
        log.debug("amdsmi_shut_down failed: %s", err)
