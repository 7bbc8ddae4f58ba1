"""Tests of ``accelbench.hardware.detect`` on fake procfs/sysfs trees and on the real machine."""

from __future__ import annotations

import dataclasses
import sys
import types
from pathlib import Path

import pytest

from accelbench.hardware.cpuid import microarchitecture
from accelbench.hardware.cpuinfo import Cache, parse_cpu_list, parse_size_bytes
from accelbench.hardware.detect import (
    Gpu,
    busy_warning,
    detect_gpus,
    detect_machine,
    is_model_hidden,
    loadavg_1m,
    machine_from_dict,
    machine_to_dict,
)

EPYC_FLAGS = (
    "fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2 avx512f avx512dq avx512ifma avx512cd avx512bw "
    "avx512vl avx_vnni avx512_bf16 avx512vbmi avx512_vbmi2 avx512_vnni avx512_bitalg avx512_vpopcntdq"
)
SPR_FLAGS = (
    "fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx avx2 avx512f avx512dq avx512cd avx512bw avx512vl "
    "avx_vnni avx512_bf16 avx512_fp16 amx_bf16 amx_tile amx_int8 tsc"
)


def _cpuinfo(vendor: str, family: int, model: int, name: str, flags: str, cpus: list[tuple[int, int]]) -> str:
    """cpuinfo text with one block per (physical id, core id) in ``cpus``."""
    blocks = [
        f"processor\t: {n}\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\n"
        f"model name\t: {name}\nstepping\t: 1\nphysical id\t: {socket}\ncore id\t\t: {core}\n"
        f"flags\t\t: {flags}\n"
        for n, (socket, core) in enumerate(cpus)
    ]
    return "\n".join(blocks) + "\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _fake_tree(root: Path, cpuinfo: str, caches: list[tuple[int, str, str, str]], mem_kb: int) -> Path:
    _write(root / "proc/cpuinfo", cpuinfo)
    _write(root / "proc/meminfo", f"MemTotal:       {mem_kb} kB\nMemFree:        1000 kB\n")
    _write(root / "proc/loadavg", "1.50 0.80 0.30 2/100 1234\n")
    for index, (level, kind, size, shared) in enumerate(caches):
        folder = root / f"sys/devices/system/cpu/cpu0/cache/index{index}"
        for name, value in (
            ("level", str(level)),
            ("type", kind),
            ("size", size),
            ("shared_cpu_list", shared),
        ):
            _write(folder / name, value + "\n")
    return root


@pytest.fixture
def epyc(tmp_path: Path) -> Path:
    cpuinfo = _cpuinfo("AuthenticAMD", 25, 17, "AMD EPYC", EPYC_FLAGS, [(0, 0), (0, 1)])
    caches = [(1, "Data", "32K", "0"), (1, "Instruction", "32K", "0"), (2, "Unified", "1024K", "0"),
              (3, "Unified", "32768K", "0-1")]  # fmt: skip
    return _fake_tree(tmp_path / "epyc", cpuinfo, caches, 24 * 1024 * 1024)


@pytest.fixture
def sapphire_rapids(tmp_path: Path) -> Path:
    cpus = [(socket, core) for socket in (0, 1) for core in range(4) for _thread in (0, 1)]
    cpuinfo = _cpuinfo("GenuineIntel", 6, 0x8F, "Intel(R) Xeon(R) Platinum 8480+", SPR_FLAGS, cpus)
    caches = [(1, "Data", "48K", "0,8"), (1, "Instruction", "32K", "0,8"), (2, "Unified", "2048K", "0,8"),
              (3, "Unified", "105M", "0-7,16-23")]  # fmt: skip
    root = _fake_tree(tmp_path / "spr", cpuinfo, caches, 512 * 1024 * 1024)
    (root / "sys/class/powercap/intel-rapl:0").mkdir(parents=True)
    return root


def test_epyc_like_vm(epyc: Path) -> None:
    m = detect_machine(epyc, probe_gpus=False)
    assert (m.cpu_model, m.cpu_vendor, m.cpu_family, m.cpu_model_number, m.cpu_stepping) == (
        "AMD EPYC", "AuthenticAMD", 25, 17, 1)  # fmt: skip
    assert m.microarchitecture == "Zen 4 (Genoa)"
    assert m.model_hidden
    assert (m.logical_cores, m.physical_cores, m.sockets) == (2, 2, 1)
    assert "avx512_bf16" in m.isa_flags and "avx2" in m.isa_flags and "sse4_2" in m.isa_flags
    assert not any(f.startswith("amx") for f in m.isa_flags)
    assert "fpu" not in m.isa_flags and "sse" not in m.isa_flags
    assert m.caches == (
        Cache(1, "data", 32 * 1024, 1),
        Cache(1, "instruction", 32 * 1024, 1),
        Cache(2, "unified", 1024 * 1024, 1),
        Cache(3, "unified", 32 * 1024 * 1024, 2),
    )
    assert m.mem_bytes == 24 * 2**30
    assert m.gpus == () and m.energy_counters == ()
    assert loadavg_1m(epyc) == 1.5


def test_sapphire_rapids_like_two_socket_host(sapphire_rapids: Path) -> None:
    m = detect_machine(sapphire_rapids, probe_gpus=False)
    assert m.microarchitecture == "Sapphire Rapids"
    assert not m.model_hidden
    assert (m.logical_cores, m.physical_cores, m.sockets) == (16, 8, 2)
    assert {"amx_bf16", "amx_tile", "amx_int8", "avx512_fp16", "avx_vnni"} <= set(m.isa_flags)
    assert m.caches[3] == Cache(3, "unified", 105 * 2**20, 16)
    assert m.caches[0].shared_by_cpus == 2
    assert m.energy_counters == ("rapl",)


def test_arm_cpuinfo_uses_implementer_part_and_sysfs_topology(tmp_path: Path) -> None:
    blocks = "".join(
        f"processor\t: {n}\nFeatures\t: fp asimd asimddp sve sve2 i8mm bf16 cpuid\nCPU implementer\t: 0x41\n"
        f"CPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd4f\nCPU revision\t: 1\n\n"
        for n in range(2)
    )
    root = _fake_tree(tmp_path, blocks, [(1, "Data", "64K", "0")], 1024)
    for n in range(2):
        _write(root / f"sys/devices/system/cpu/cpu{n}/topology/core_id", f"{n}\n")
    m = detect_machine(root, probe_gpus=False)
    assert (m.cpu_vendor, m.cpu_model_number, m.microarchitecture) == ("ARM", 0xD4F, "Neoverse V2")
    assert m.model_hidden and m.physical_cores == 2
    assert {"asimd", "sve", "sve2", "i8mm", "bf16"} <= set(m.isa_flags) and "fp" not in m.isa_flags


def test_empty_tree_does_not_crash(tmp_path: Path) -> None:
    m = detect_machine(tmp_path, probe_gpus=False)
    assert m.logical_cores == 1 and m.mem_bytes == 0 and m.caches == ()
    assert m.microarchitecture == "unknown"


def test_fingerprint_ignores_volatile_fields(epyc: Path, sapphire_rapids: Path) -> None:
    m = detect_machine(epyc, probe_gpus=False)
    assert len(m.fingerprint) == 16 and int(m.fingerprint, 16) >= 0
    volatile = dataclasses.replace(m, kernel="7.0", python_version="3.13.1", mem_bytes=m.mem_bytes - 4096)
    assert volatile.fingerprint == m.fingerprint
    assert dataclasses.replace(m, logical_cores=4).fingerprint != m.fingerprint
    assert detect_machine(sapphire_rapids, probe_gpus=False).fingerprint != m.fingerprint


def test_machine_dict_round_trip(sapphire_rapids: Path) -> None:
    detected = detect_machine(sapphire_rapids, probe_gpus=False)
    gpu = Gpu(0, "NVIDIA H200", 141 * 2**30, "570.86.15")
    m = dataclasses.replace(detected, gpus=(gpu,), energy_counters=("rapl", "nvml"))
    assert m.fingerprint != detected.fingerprint
    doc = machine_to_dict(m)
    assert doc["fingerprint"] == m.fingerprint and doc["schema_version"] == 2
    assert machine_from_dict(doc) == m
    with pytest.raises(ValueError):
        machine_from_dict(doc | {"schema_version": 3})


def test_version_1_machine_document_loads_and_is_identified_again(sapphire_rapids: Path) -> None:
    m = detect_machine(sapphire_rapids, probe_gpus=False)
    new_fields = ("microarchitecture_basis", "virtual_machine", "system_vendor", "system_product")
    old = {k: v for k, v in machine_to_dict(m).items() if k not in new_fields}
    old |= {"schema_version": 1, "microarchitecture": "Skylake-SP / Cascade Lake"}  # a version 1 name
    loaded = machine_from_dict(old)
    assert loaded.microarchitecture == "Sapphire Rapids" and "CPUID" in loaded.microarchitecture_basis
    assert loaded.virtual_machine is False and loaded.fingerprint == m.fingerprint


def test_microarchitecture_table() -> None:
    assert microarchitecture("AuthenticAMD", 25, 0x11) == "Zen 4 (Genoa)"
    assert microarchitecture("AuthenticAMD", 25, 0x01) == "Zen 3 (Milan)"
    assert microarchitecture("AuthenticAMD", 26, 0x02) == "Zen 5 (Turin)"
    assert microarchitecture("GenuineIntel", 6, 0xCF) == "Emerald Rapids"
    assert microarchitecture("GenuineIntel", 6, 0x01) == "unknown"
    assert microarchitecture("GenuineIntel", 6, 0x55, 4) == "Skylake-SP"
    assert microarchitecture("GenuineIntel", 6, 0x55, 7) == "Cascade Lake"
    assert microarchitecture("GenuineIntel", 6, 0x55, 11) == "Cooper Lake"
    assert microarchitecture("GenuineIntel", 6, 0x55) == "Skylake-SP"  # no stepping: the first row
    assert microarchitecture("Apple", 8, 0x035) == "Apple M2 Pro"


@pytest.mark.parametrize(
    ("name", "hidden"),
    [("AMD EPYC", True), ("", True), ("Intel Xeon Processor (Icelake)", True),
     ("QEMU Virtual CPU version 2.5+", True), ("AMD EPYC 9654 96-Core Processor", False),
     ("Intel(R) Xeon(R) Platinum 8480+", False)],
)  # fmt: skip
def test_model_hidden(name: str, hidden: bool) -> None:
    assert is_model_hidden(name) is hidden


def test_parsers() -> None:
    assert parse_size_bytes("48K") == 48 * 1024
    assert parse_size_bytes("32M\n") == 32 * 2**20
    assert parse_size_bytes("512") == 512
    assert parse_size_bytes("big") == 0
    assert parse_cpu_list("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    assert parse_cpu_list("") == set()


def test_busy_warning() -> None:
    assert busy_warning(0.9, 2) is None
    message = busy_warning(1.4, 2)
    assert message is not None and "1.40" in message
    assert busy_warning(3.0, 8, per_core=0.25) is not None


def test_gpus_through_a_fake_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: 2,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: b"NVIDIA H200" if h == 0 else "NVIDIA L4",
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=(h + 1) * 2**30),
        nvmlSystemGetDriverVersion=lambda: "570.86.15",
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert detect_gpus() == (
        Gpu(0, "NVIDIA H200", 2**30, "570.86.15"),
        Gpu(1, "NVIDIA L4", 2 * 2**30, "570.86.15"),
    )


def test_gpus_empty_when_nvml_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail() -> None:
        raise RuntimeError("NVML Shared Library Not Found")

    monkeypatch.setitem(sys.modules, "pynvml", types.SimpleNamespace(nvmlInit=fail))
    assert detect_gpus() == ()
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    assert detect_gpus() == ()


def test_real_machine_is_sane() -> None:
    m = detect_machine()
    assert m.logical_cores >= 1 and m.physical_cores >= 1 and m.sockets >= 1
    assert m.physical_cores <= m.logical_cores
    assert m.mem_bytes > 0
    assert m.python_version.startswith("3.")
    assert all(c.size_bytes > 0 for c in m.caches)
    assert detect_machine().fingerprint == m.fingerprint
    assert machine_from_dict(machine_to_dict(m)) == m
    assert loadavg_1m() >= 0.0
