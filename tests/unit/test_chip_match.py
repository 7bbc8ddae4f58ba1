"""One chip table: cloud and laptop CPU strings matched to a row, VM chip counts, energy on that row."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from accelbench.cell.loadgen_body import LoadgenBody
from accelbench.hardware import cpuid, detect
from accelbench.hardware.chips import bundled_chips
from accelbench.hardware.detect import Machine, detect_machine
from accelbench.hardware.match import _sku, match_machine
from accelbench.head import Head
from accelbench.loadgen_figures import LoadgenVerdict
from accelbench.meters.energy import CpuEstimateMeter, cpu_tdp
from accelbench.normalize.factors import figures
from accelbench.normalize.subjects import from_result
from accelbench.ranges import Range
from accelbench.results import Cell, Result

SPR_FLAGS = "fpu sse4_2 avx avx2 fma avx512f avx512dq avx512ifma avx512_vnni avx512_bf16 amx_tile amx_bf16"
MILAN_FLAGS = "fpu sse4_2 avx avx2 fma"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def x86_tree(
    root: Path, vendor: str, family: int, model: int, name: str, flags: str, *,
    stepping: int = 1, cpus: int = 2, threads_per_core: int = 2, caches: tuple[tuple[str, str], ...] = (),
) -> Path:  # fmt: skip
    """A fake procfs/sysfs tree: ``cpus`` logical CPUs, ``threads_per_core`` of them per core id."""
    blocks = [
        f"processor\t: {n}\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\n"
        f"model name\t: {name}\nstepping\t: {stepping}\nphysical id\t: 0\n"
        f"core id\t\t: {n // threads_per_core}\n"
        f"flags\t\t: {flags}\n"
        for n in range(cpus)
    ]
    _write(root / "proc/cpuinfo", "\n".join(blocks) + "\n")
    for index, (kind, size) in enumerate(caches):
        folder = root / f"sys/devices/system/cpu/cpu0/cache/index{index}"
        level = {"Data": 1, "Instruction": 1}.get(kind, 2 if index == 2 else 3)
        for file, value in (("level", str(level)), ("type", "Unified" if level > 1 else kind), ("size", size),
                            ("shared_cpu_list", "0")):  # fmt: skip
            _write(folder / file, value + "\n")
    return root


def arm_tree(
    root: Path, part: int, system_vendor: str = "", product: str = "", cpus: int = 2, implementer: int = 0x41
) -> Path:
    """An Arm cpuinfo (no model name, as the kernel prints it) with sysfs topology and optional DMI."""
    blocks = "".join(
        f"processor\t: {n}\nFeatures\t: fp asimd sve bf16 i8mm\nCPU implementer\t: {implementer:#x}\n"
        f"CPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: {part:#x}\nCPU revision\t: 1\n\n"
        for n in range(cpus)
    )
    _write(root / "proc/cpuinfo", blocks)
    for n in range(cpus):
        _write(root / f"sys/devices/system/cpu/cpu{n}/topology/core_id", f"{n}\n")
    if system_vendor:
        _write(root / "sys/class/dmi/id/sys_vendor", system_vendor + "\n")
        _write(root / "sys/class/dmi/id/product_name", product + "\n")
    return root


# ------------------------------------------------------------------------------ cloud VM cpuinfo strings


def test_gcp_c4_emerald_rapids_custom_sku_falls_back_to_the_family_row(tmp_path: Path) -> None:
    name = "Intel(R) Xeon(R) Platinum 8581C CPU @ 2.10GHz"
    m = detect_machine(
        x86_tree(tmp_path, "GenuineIntel", 6, 207, name, SPR_FLAGS + " hypervisor"), probe_gpus=False
    )
    assert m.virtual_machine and not m.model_hidden and m.microarchitecture == "Emerald Rapids"
    found = match_machine(m)
    assert found.chip is not None and found.chip.key == "CPU: Intel Xeon Platinum 8592+"
    assert found.basis == "microarchitecture guess" and "SKU 8581C" in found.notes[0]
    assert found.count == pytest.approx(2 / 2 / 64)
    assert found.count_basis == (
        "2 vCPUs / 2 threads per core / 64 cores per socket = 0.0156 chips (estimate: VM share of one "
        "socket; up to 0.0312 if each vCPU is a whole core)"
    )
    assert found.count_range == Range(2 / 2 / 64, 2 / 64, 2 / 2 / 64)


def test_qemu_named_emerald_rapids_model_is_matched_by_family_and_model(tmp_path: Path) -> None:
    name = "Intel Xeon Processor (Emerald Rapids)"
    m = detect_machine(
        x86_tree(tmp_path, "GenuineIntel", 6, 207, name, SPR_FLAGS + " hypervisor"), probe_gpus=False
    )
    assert m.model_hidden and m.microarchitecture_basis.startswith("CPUID GenuineIntel family 0x6 model 0xcf")
    found = match_machine(m)
    assert found.chip is not None and found.chip.key == "CPU: Intel Xeon Platinum 8592+"
    assert "does not name the SKU" in found.notes[0]


def test_codename_in_the_model_string_decides_when_cpuid_names_nothing(tmp_path: Path) -> None:
    name = "Intel Xeon Processor (Cascadelake)"
    tree = x86_tree(tmp_path, "GenuineIntel", 6, 0x02, name, "fpu avx512f avx512_vnni hypervisor")
    m = detect_machine(tree, probe_gpus=False)
    assert m.microarchitecture == "Cascade Lake" and "codename" in m.microarchitecture_basis
    found = match_machine(m)
    assert found.chip is not None and found.chip.key == "CPU: Intel Xeon Platinum 8280"


def test_this_projects_vm_amx_on_a_client_model_number_is_granite_rapids(tmp_path: Path) -> None:
    """/proc/cpuinfo of this project's VM: model 167 (Rocket Lake, no AMX) with AMX and a 64 KiB L1i."""
    caches = (("Data", "48K"), ("Instruction", "64K"), ("Unified", "2048K"), ("Unified", "491520K"))
    tree = x86_tree(tmp_path, "GenuineIntel", 6, 167, "Intel(R) Xeon(R) Processor", SPR_FLAGS + " hypervisor",
                    threads_per_core=1, caches=caches)  # fmt: skip
    m = detect_machine(tree, probe_gpus=False)
    assert m.microarchitecture == "Granite Rapids"
    assert "Rocket Lake, which has no AMX" in m.microarchitecture_basis
    found = match_machine(m)
    assert found.chip is not None and found.chip.key == "CPU: Intel Xeon 6980P"
    assert found.count == pytest.approx(2 / 2 / 128)  # the chip's threads per core, not the VM's topology
    sapphire = detect_machine(x86_tree(tmp_path / "spr", "GenuineIntel", 6, 167, "Intel(R) Xeon(R) Processor",
                                       SPR_FLAGS, caches=(("Data", "48K"), ("Instruction", "32K"))),
                              probe_gpus=False)  # fmt: skip
    assert sapphire.microarchitecture == "Sapphire Rapids"


@pytest.mark.parametrize(
    ("name", "model", "key", "cores"),
    [("AMD EPYC 9R14 96-Core Processor", 0x11, "CPU: AMD EPYC 9654", 96),  # AWS c7a/m7a (Genoa)
     ("AMD EPYC 7B13", 0x01, "CPU: AMD EPYC 7763", 64),  # GCP N2D/T2D (Milan)
     ("AMD EPYC Processor", 0x01, "CPU: AMD EPYC 7763", 64)],  # a KVM default string
)  # fmt: skip
def test_cloud_epyc_strings_match_their_family_row(
    tmp_path: Path, name: str, model: int, key: str, cores: int
) -> None:
    m = detect_machine(
        x86_tree(tmp_path, "AuthenticAMD", 25, model, name, MILAN_FLAGS + " hypervisor"), probe_gpus=False
    )
    found = match_machine(m)
    assert found.chip is not None and found.chip.key == key and found.basis == "microarchitecture guess"
    assert found.count == pytest.approx(2 / 2 / cores)
    assert cpu_tdp(m).chip_key == key


def test_graviton3_by_cpu_part_on_ec2(tmp_path: Path) -> None:
    m = detect_machine(arm_tree(tmp_path, 0xD40, "Amazon EC2", "c7g.large"), probe_gpus=False)
    assert (m.cpu_vendor, m.microarchitecture, m.virtual_machine) == ("ARM", "Neoverse V1", True)
    found = match_machine(m)
    assert found.chip is not None and found.chip.key == "CPU: AWS Graviton3"
    assert found.detected == "ARM CPU part 0xd40 (Neoverse V1)"  # lscpu's "Neoverse-V1"
    assert found.count_basis.startswith("2 vCPUs / 1 threads per core / 64 cores per socket = 0.0312 chips")
    assert "up to" not in found.count_basis and found.count_range.is_point  # no SMT: vCPU = core


def test_neoverse_n1_is_graviton2_on_ec2_and_ampere_altra_elsewhere(tmp_path: Path) -> None:
    aws = detect_machine(arm_tree(tmp_path / "aws", 0xD0C, "Amazon EC2", "m6g.large"), probe_gpus=False)
    oracle = detect_machine(
        arm_tree(tmp_path / "oci", 0xD0C, "QEMU", "Standard PC (Q35 + ICH9, 2009)"), probe_gpus=False
    )
    metal = detect_machine(arm_tree(tmp_path / "metal", 0xD0C, "Amazon EC2", "m6g.metal"), probe_gpus=False)
    assert match_machine(aws).chip.key == "CPU: AWS Graviton2"  # type: ignore[union-attr]
    assert match_machine(oracle).chip.key == "CPU: Ampere Altra Q80-30"  # type: ignore[union-attr]
    assert oracle.virtual_machine and not metal.virtual_machine
    assert match_machine(metal).count_basis == "2 cores / 64 cores per socket = 0.0312 chips"


def test_ampereone_by_its_own_cpu_part_on_a_cloud_vm(tmp_path: Path) -> None:
    """Ampere's implementer 0xC0, part 0xAC3 (Linux cputype.h AMPERE1): the AmpereOne row, whose 192
    cores have no SMT, so 2 vCPUs are exactly 2 cores (the count is a point, not a range)."""
    tree = arm_tree(tmp_path, 0xAC3, "QEMU", "Standard PC (Q35 + ICH9, 2009)", implementer=0xC0)
    m = detect_machine(tree, probe_gpus=False)
    assert (m.cpu_vendor, m.microarchitecture, m.virtual_machine) == ("Ampere", "AmpereOne", True)
    found = match_machine(m)
    assert found.chip is not None and found.chip.key == "CPU: AmpereOne 192-core"
    assert found.count == pytest.approx(2 / 192) and found.count_range.is_point
    assert cpu_tdp(m).tdp_w == 350.0 and cpu_tdp(m).threads_per_core == 1.0


def test_apple_m2_pro_on_macos_by_sysctl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    answers = {"machdep.cpu.brand_string": "Apple M2 Pro", "hw.logicalcpu": "12", "hw.physicalcpu": "12"}
    monkeypatch.setattr(detect.platform, "system", lambda: "Darwin")
    monkeypatch.setattr(detect, "_sysctl", lambda name: answers.get(name, ""))
    m = detect_machine(tmp_path, probe_gpus=False)  # no /proc/cpuinfo, as on macOS
    assert (m.cpu_model, m.cpu_vendor, m.logical_cores, m.physical_cores) == ("Apple M2 Pro", "Apple", 12, 12)
    found = match_machine(m)
    assert found.chip is not None and found.chip.key == "CPU: Apple M2 Pro" and found.basis == "model string"
    assert (
        found.count == pytest.approx(1.0) and found.count_basis == "12 cores / 12 cores per socket = 1 chips"
    )


@pytest.mark.parametrize(
    ("name", "key"),
    [("Intel(R) Xeon(R) Platinum 8480+", "CPU: Intel Xeon Platinum 8480+"),
     ("Intel(R) Xeon(R) 6980P", "CPU: Intel Xeon 6980P"),
     ("13th Gen Intel(R) Core(TM) i9-13900K", "CPU: Intel Core i9-13900K"),
     ("Intel(R) Core(TM) Ultra 9 285K", "CPU: Intel Core Ultra 9 285K"),
     ("AMD Ryzen 9 7950X 16-Core Processor", "CPU: AMD Ryzen 9 7950X"),
     ("Apple M2", "CPU: Apple M2"),
     ("Apple M4 Max", "CPU: Apple M4 Max")],
)  # fmt: skip
def test_model_strings_name_their_sku_row(name: str, key: str) -> None:
    machine = _machine(name, "cpu", vm=False)
    found = match_machine(machine)
    assert found.chip is not None and found.chip.key == key and found.basis == "model string"


def test_skylake_and_cascade_lake_differ_by_stepping() -> None:
    assert cpuid.microarchitecture("GenuineIntel", 6, 0x55, 4) == "Skylake-SP"
    assert match_machine(_machine("Intel(R) Xeon(R) CPU @ 2.00GHz", "Skylake-SP")).chip.key == (  # type: ignore[union-attr]
        "CPU: Intel Xeon Platinum 8180"
    )


# ------------------------------------------------------------------------- one row for report and energy


def _machine(model: str, name: str, vm: bool = True, vendor: str = "", cpus: int = 2) -> Machine:
    return Machine(
        cpu_model=model, cpu_vendor="unknown", cpu_family=0, cpu_model_number=0, cpu_stepping=0,
        microarchitecture=name, model_hidden=detect.is_model_hidden(model), logical_cores=cpus,
        physical_cores=cpus if not vm else cpus // 2 or 1, sockets=1, isa_flags=(), caches=(), mem_bytes=1,
        os_name="Linux", kernel="6.1", python_version="3.11.9", virtual_machine=vm, system_vendor=vendor,
    )  # fmt: skip


def test_every_cpu_row_is_reachable_and_energy_uses_the_row_the_report_uses() -> None:
    """The old mismatch (report unmatched, energy matched in its own table) cannot happen: one row each."""
    table = bundled_chips()
    rows = [chip for chip in table if chip.kind == "cpu"]
    assert len(rows) == 40  # AmpereOne added (issue 42 item 2), Azure Cobalt 100 (issue 42 chips)
    reached, without_tdp = set(), set()
    for chip in rows:
        machines = []
        if _sku(chip.key.removeprefix("CPU: ")):
            machines.append(_machine(chip.key.removeprefix("CPU: "), "unknown"))
        if chip.microarchitecture:
            machines.append(_machine("", chip.microarchitecture, vendor=chip.system_vendor))
        assert machines, f"{chip.key} can be matched neither by model string nor by microarchitecture"
        for machine in machines:
            found, tdp = match_machine(machine, table), cpu_tdp(machine, table)
            assert found.chip is not None, chip.key
            reached.add(found.chip.key)
            if found.chip.tdp_w is None:  # no published TDP: the fallback, naming the row it could not use
                assert tdp.chip_key == "" and f"{found.chip.key} has no TDP" in tdp.source
                without_tdp.add(found.chip.key)
                continue
            assert found.chip.key == tdp.chip_key and tdp.tdp_w == found.chip.tdp_w.value.central, chip.key
            share_w = CpuEstimateMeter(tdp, machine.logical_cores, machine.sockets).share_w
            assert share_w == pytest.approx(tdp.tdp_w * found.count), (
                chip.key
            )  # energy share == chips counted
    assert reached == {chip.key for chip in rows}
    assert without_tdp == {"CPU: AWS Graviton4", "CPU: Microsoft Azure Cobalt 100"}  # none published


def test_a_vm_result_gets_per_chip_figures_with_the_count_basis() -> None:
    machine = _machine("Intel Xeon Processor (Emerald Rapids)", "Emerald Rapids")
    verdict = LoadgenVerdict("offline", True, (), 100.0, 100, "quick", False, "logs")
    result = Result(
        "run1",
        Cell("resnet50", "onnxruntime", "offline", "cpu", "tiny"),
        Head("ok"),
        LoadgenBody(loadgen=verdict),
        driver="loadgen",
    )
    found = {f.per: f for f in figures(from_result("run1/cell", result, match_machine(machine)))}
    assert found["chip"].denominator.central == pytest.approx(2 / 2 / 64)
    assert found["chip"].value.central == pytest.approx(2 / 2 / 64 / 100.0)  # chip-seconds per sample
    # a guest cannot tell sibling threads from whole cores: the count, and every per-chip figure, is a range
    assert (found["chip"].denominator.low, found["chip"].denominator.high) == pytest.approx((1 / 64, 2 / 64))
    assert found["transistor"].denominator.high == pytest.approx(2 * found["transistor"].denominator.low)
    assert "2 vCPUs / 2 threads per core / 64 cores per socket" in found["chip"].source
    assert found["transistor"].denominator.central == pytest.approx(61e9 / 64)
    assert found["tdp_w"].denominator.central == pytest.approx(350 / 64)
    bare = dataclasses.replace(machine, virtual_machine=False, physical_cores=2)
    on_metal = {f.per: f for f in figures(from_result("run1/cell", result, match_machine(bare)))}
    assert on_metal["chip"].denominator.central == pytest.approx(2 / 64)
    assert on_metal["chip"].denominator.is_point  # bare metal: the cores are counted, not estimated
