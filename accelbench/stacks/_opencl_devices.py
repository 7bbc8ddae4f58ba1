"""Finding an OpenCL device that can build kernels, including drivers pip installed into this environment.

``opencl_device("cpu")`` is the first OpenCL CPU device whose compiler builds a probe kernel, PoCL first;
``device_reason`` asks the same question in a fresh interpreter (see below for why);
``opencl_device("cuda:N")`` is the N-th GPU of the NVIDIA OpenCL platform. ``cap_compute_units`` splits a
device into a sub-device of ``threads`` compute units (OpenCL device fission), so a cell uses exactly its
threads whatever the driver.

pyopencl's wheel brings an ICD loader and PoCL 3.0-rc2 (LLVM 14). That PoCL cannot build kernels for CPUs
newer than LLVM 14 knows: on AMD Zen 5 it fails with ``unknown target CPU 'generic'``. Intel's CPU runtime
(``intel-opencl-rt`` with ``intel-cmplr-lib-rt``) works on any x86-64 CPU. But pip puts its
``libintelocl.so`` in ``<prefix>/lib``, and the ``.icd`` file it ships names a path on the machine that
built it, so the loader never finds it.

``expose_pip_drivers`` writes a vendors folder with one ``.icd`` file per driver: those of
``/etc/OpenCL/vendors`` (GPU drivers) and the pip-installed ones. It then points ``OCL_ICD_VENDORS`` at
that folder, before the loader first runs. If the user has set ``OCL_ICD_VENDORS``, it is left alone.

Intel's driver needs oneTBB 2022 or newer. A process that has already loaded an older ``libtbb.so.12``
(OpenVINO ships 2021.13) cannot load it: the ICD loader then skips it without a word. Cells run one
stack per process, so they are not affected, but ``accelbench list stacks`` asks every stack in one
process, hence ``device_reason`` probes in a fresh interpreter.
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

from accelbench.errors import Unavailable
from accelbench.stacks._torch_device import first_line, split_device

SYSTEM_VENDORS = Path("/etc/OpenCL/vendors")
VENDORS_VARIABLE = "OCL_ICD_VENDORS"
_PIP_DRIVERS = ("libintelocl.so",)
"""Driver libraries that pip packages install into ``<prefix>/lib``."""
_POCL = "Portable Computing Language"
_PROBE_KERNEL = "__kernel void probe(__global float* x) { x[get_global_id(0)] = 1.0f; }"
_PROBE_TIMEOUT_S = 120


def pip_driver_paths() -> list[Path]:
    """The OpenCL driver libraries installed by pip into this environment."""
    lib = Path(sys.prefix) / "lib"
    return [lib / name for name in _PIP_DRIVERS if (lib / name).is_file()]


def vendor_entries() -> dict[str, str]:
    """``.icd`` file name -> driver library: the system's drivers, then the pip-installed ones."""
    entries = {}
    if SYSTEM_VENDORS.is_dir():
        for icd in sorted(SYSTEM_VENDORS.glob("*.icd")):
            entries[icd.name] = icd.read_text().strip()
    for path in pip_driver_paths():
        entries[f"pip-{path.name.partition('.')[0]}.icd"] = str(path)
    return entries


def expose_pip_drivers() -> Path | None:
    """Point ``OCL_ICD_VENDORS`` at a folder listing the system's and pip's drivers; return the folder.

    Returns None (and changes nothing) when pip installed no driver or the variable is already set.
    The folder is named after its contents in the temp folder, so processes share it.
    """
    if VENDORS_VARIABLE in os.environ or not pip_driver_paths():
        return None
    entries = vendor_entries()
    digest = hashlib.sha256(repr(sorted(entries.items())).encode()).hexdigest()[:12]
    folder = Path(tempfile.gettempdir()) / f"accelbench-opencl-vendors-{digest}"
    folder.mkdir(parents=True, exist_ok=True)
    for name, library in entries.items():
        icd = folder / name
        if not icd.is_file() or icd.read_text() != library + "\n":
            temp = folder / f".{name}.{os.getpid()}.tmp"
            temp.write_text(library + "\n")
            os.replace(temp, icd)
    os.environ[VENDORS_VARIABLE] = str(folder)
    return folder


@functools.cache
def device_reason(device: str) -> str | None:
    """Why no OpenCL device for ``device`` builds kernels (None: one does), probed in a fresh interpreter."""
    code = (
        "import sys\n"
        "from accelbench.stacks._opencl_devices import _usable_device\n"
        "print('reason:' + _usable_device(sys.argv[1])[1])\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, device], capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return f"the OpenCL device probe took over {_PROBE_TIMEOUT_S} s"
    lines = [line for line in done.stdout.splitlines() if line.startswith("reason:")]
    if done.returncode != 0 or not lines:
        tail = done.stderr.strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
        return f"the OpenCL device probe failed: {tail[0]}"
    return lines[-1].removeprefix("reason:") or None


def opencl_device(device: str) -> Any:
    """The pyopencl device for ``cpu`` or ``cuda:N`` that builds kernels; Unavailable with the reason."""
    found, reason = _usable_device(device)
    if found is None:
        raise Unavailable(reason)
    return found


@functools.cache
def _usable_device(device: str) -> tuple[Any, str]:
    """(device, "") or (None, why): the first candidate whose compiler builds the probe kernel."""
    import pyopencl as cl

    expose_pip_drivers()
    kind, index = split_device(device)
    try:
        platforms = cl.get_platforms()
    except cl.Error as exc:
        return None, f"no OpenCL platform: {first_line(exc)}"
    candidates = _candidates(platforms, kind, index or 0)
    if not candidates:
        what = "CPU device" if kind == "cpu" else f"NVIDIA GPU device {index or 0} (CUDA OpenCL ICD)"
        return None, f"no OpenCL {what} (platforms: {', '.join(p.name for p in platforms) or 'none'})"
    failures = []
    for candidate in candidates:
        error = _build_error(candidate)
        if error is None:
            return candidate, ""
        failures.append(f"{candidate.platform.name}: {error}")
    return None, f"no OpenCL {kind} device builds kernels ({'; '.join(failures)}){_skipped_note(platforms)}"


def _skipped_note(platforms: list[Any]) -> str:
    """A hint when pip installed Intel's driver but the ICD loader did not load it in this process."""
    if not pip_driver_paths() or any("Intel" in platform.name for platform in platforms):
        return ""
    return "; pip's libintelocl.so did not load in this process (an older TBB loaded first?)"


def _candidates(platforms: list[Any], kind: str, index: int) -> list[Any]:
    """CPU devices (PoCL's first), or the ``index``-th GPU of the NVIDIA platform (as a list)."""
    import pyopencl as cl

    if kind == "cpu":
        cpus = [one for platform in platforms for one in _devices(platform, cl.device_type.CPU)]
        return sorted(cpus, key=lambda one: one.platform.name != _POCL)
    nvidia = [p for p in platforms if "NVIDIA" in p.name.upper()]
    gpus = [one for platform in nvidia for one in _devices(platform, cl.device_type.GPU)]
    return gpus[index : index + 1]


def _devices(platform: Any, kind: int) -> list[Any]:
    import pyopencl as cl

    try:
        return list(platform.get_devices(device_type=kind))
    except cl.Error:  # a platform without devices of this kind
        return []


def _build_error(device: Any) -> str | None:
    """None when ``device`` builds the probe kernel, else the compiler's ``error:`` line."""
    import pyopencl as cl

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cl.Program(cl.Context([device]), _PROBE_KERNEL).build()
    except cl.Error as exc:
        lines = [line.strip() for line in str(exc).splitlines()]
        return next((line for line in lines if line.startswith("error:")), first_line(exc))
    return None


def cap_compute_units(device: Any, threads: int) -> Any:
    """A sub-device of ``threads`` compute units when ``device`` has more, else ``device`` itself.

    A driver without device fission keeps the whole device; callers record ``max_compute_units``.
    """
    import pyopencl as cl

    if device.max_compute_units <= threads:
        return device
    try:
        return device.create_sub_devices([cl.device_partition_property.EQUALLY, threads])[0]
    except cl.Error:
        return device
