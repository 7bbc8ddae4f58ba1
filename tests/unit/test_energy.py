"""Energy meters against fakes: a powercap tree, a pynvml and an amdsmi module, a clock and CPU times."""

# ruff: noqa: N802 - the fakes mirror pynvml's camelCase function names

from __future__ import annotations

import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from accelbench.hardware.chips import bundled_chips
from accelbench.hardware.detect import Machine
from accelbench.hardware.match import match_machine, narrowed
from accelbench.hardware.share import ceiling, clock_peaks
from accelbench.head import Energy, Head
from accelbench.meters import amd_gpu, nvml, rapl
from accelbench.meters.energy import (
    CpuEstimateMeter,
    CpuTdp,
    MeterUnavailable,
    choose_meter,
    cpu_tdp,
)
from accelbench.meters.gpu_power import GpuMeter, PowerSampler, integrate_w
from accelbench.meters.memory import DeviceMemoryMeter


class Clock:
    """A clock that moves only when told to."""

    def __init__(self, now_s: float = 0.0):
        self.now_s = now_s

    def __call__(self) -> float:
        return self.now_s


def _machine(
    name: str = "Zen 5 (Turin)", cores: int = 2, sockets: int = 1, vm: bool = False, model: int = 2
) -> Machine:
    return Machine(
        cpu_model="AMD EPYC",
        cpu_vendor="AuthenticAMD",
        cpu_family=0x1A,
        cpu_model_number=model,
        cpu_stepping=1,
        microarchitecture=name,
        model_hidden=True,
        logical_cores=cores,
        physical_cores=cores,
        sockets=sockets,
        isa_flags=(),
        caches=(),
        mem_bytes=8 * 2**30,
        os_name="Linux",
        kernel="6.1",
        python_version="3.11.7",
        virtual_machine=vm,
    )


# ---- RAPL -------------------------------------------------------------------------------------------


def _zone(root: Path, zone: str, name: str, energy_uj: int, max_uj: int = 1_000_000) -> Path:
    folder = root / zone
    folder.mkdir(parents=True)
    (folder / "name").write_text(name + "\n")
    (folder / "energy_uj").write_text(f"{energy_uj}\n")
    (folder / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return folder


def _set(folder: Path, energy_uj: int) -> None:
    tmp = folder / "energy_uj.tmp"
    tmp.write_text(f"{energy_uj}\n")
    tmp.replace(folder / "energy_uj")  # atomic, as sysfs reads are: the poll thread never sees a torn file


@pytest.fixture
def powercap(tmp_path: Path) -> dict[str, Path]:
    """Two sockets: package-0 with core and dram subzones, package-1; plus the control-type folder."""
    (tmp_path / "intel-rapl").mkdir()
    return {
        "package-0": _zone(tmp_path, "intel-rapl:0", "package-0", 999_000),
        "core": _zone(tmp_path, "intel-rapl:0:0", "core", 5),
        "dram-0": _zone(tmp_path, "intel-rapl:0:1", "dram", 10_000),
        "package-1": _zone(tmp_path, "intel-rapl:1", "package-1", 0, max_uj=2**32),
    }


def test_find_domains_keeps_package_and_dram(tmp_path: Path, powercap: dict[str, Path]) -> None:
    domains, problem = rapl.find_domains(tmp_path)
    assert problem == ""
    assert [d.name for d in domains] == ["package-0", "dram-0", "package-1"]
    assert [d.max_energy_range_uj for d in domains] == [1_000_000, 1_000_000, 2**32]


def test_rapl_window_with_one_wrap(tmp_path: Path, powercap: dict[str, Path]) -> None:
    clock, syncs = Clock(10.0), []
    domains = rapl.find_domains(tmp_path)[0]
    meter = rapl.RaplMeter(domains, poll_s=None, sync=lambda: syncs.append(1), clock=clock)
    meter.begin_window("trials")
    _set(powercap["package-0"], 3_000)  # wrapped: 1_000 uJ to the top, 3_000 after it
    _set(powercap["dram-0"], 510_000)
    _set(powercap["package-1"], 2_000_000)
    clock.now_s = 12.0
    reading = meter.end_window("trials")
    assert reading.domains == {"package-0": 0.004, "dram-0": 0.5, "package-1": 2.0}
    assert reading.energy_j == pytest.approx(2.504)
    assert reading.window_s == 2.0 and reading.power_w == pytest.approx(1.252)
    assert reading.provenance == "measured" and "wrap-around" in reading.formula
    assert len(syncs) == 2


def test_rapl_window_spanning_several_wraps_is_followed_by_polling(
    tmp_path: Path, powercap: dict[str, Path]
) -> None:
    domains = tuple(d for d in rapl.find_domains(tmp_path)[0] if d.name == "package-0")
    meter = rapl.RaplMeter(domains, poll_s=None, clock=Clock())
    _set(powercap["package-0"], 900_000)
    meter.begin_window("w")
    for value in (100_000, 950_000, 50_000):  # +200_000 (wrap), +850_000, +100_000 (wrap)
        _set(powercap["package-0"], value)
        meter.poll()
    reading = meter.end_window("w")
    assert reading.energy_j == pytest.approx(1.15)


def test_rapl_background_thread_polls_and_stops(tmp_path: Path, powercap: dict[str, Path]) -> None:
    meter = rapl.RaplMeter(rapl.find_domains(tmp_path)[0], poll_s=0.01)
    meter.begin_window("w")
    for value in (999_500, 500_000, 999_000):  # +500, +500_500 (wrap), +499_000: back where it began
        _set(powercap["package-0"], value)
        time.sleep(0.1)
    reading = meter.end_window("w")
    meter.close()
    assert reading.domains["package-0"] == pytest.approx(1.0)  # 0 J had nobody polled in between


def test_unreadable_rapl_is_reported_and_the_estimate_is_used(tmp_path: Path) -> None:
    zone = tmp_path / "intel-rapl:0"
    zone.mkdir()
    (zone / "name").write_text("package-0\n")
    (zone / "energy_uj").mkdir()  # reading it fails like a root-only file does for a user
    (zone / "max_energy_range_uj").write_text("1000\n")
    domains, problem = rapl.find_domains(tmp_path)
    assert domains == () and "not readable" in problem
    meter = choose_meter(_machine(), "cpu", powercap_root=tmp_path)
    assert isinstance(meter, CpuEstimateMeter)
    meter.begin_window("w")
    assert "not readable" in meter.end_window("w").formula


def test_choose_meter_prefers_rapl_on_cpu(tmp_path: Path, powercap: dict[str, Path]) -> None:
    meter = choose_meter(_machine(), "cpu", powercap_root=tmp_path)
    assert isinstance(meter, rapl.RaplMeter)
    meter.close()


@pytest.mark.parametrize(
    "make_meter",
    [
        lambda: CpuEstimateMeter(CpuTdp(100, 10, "test"), cores=1, cpu_s=lambda: 0.0, clock=Clock()),
        lambda: DeviceMemoryMeter("cpu"),
    ],
    ids=["energy", "memory"],
)
def test_windows_must_be_begun_once_and_ended_once(make_meter: Callable[[], Any]) -> None:
    meter = make_meter()
    meter.begin_window("a")
    with pytest.raises(ValueError, match="already open"):
        meter.begin_window("a")
    meter.end_window("a")
    with pytest.raises(ValueError, match="not begun"):
        meter.end_window("a")


# ---- the estimate -----------------------------------------------------------------------------------


def _estimate(meter: CpuEstimateMeter, clock: Clock, cpu: list[float], wall_s: float, cpu_s: float) -> Any:
    meter.begin_window("w")
    clock.now_s += wall_s
    cpu[0] += cpu_s
    return meter.end_window("w")


def test_estimate_from_known_utilisation() -> None:
    clock, cpu = Clock(100.0), [5.0]
    meter = CpuEstimateMeter(cpu_tdp(_machine()), cores=2, cpu_s=lambda: cpu[0], clock=clock)
    reading = _estimate(meter, clock, cpu, wall_s=20.0, cpu_s=38.0)  # u = 38 / (20 x 2) = 0.95
    share_w = 500 * 2 / 128
    assert meter.share_w == share_w
    assert reading.domains == {"cpu_static": share_w * 0.3 * 20, "cpu_dynamic": share_w * 0.7 * 0.95 * 20}
    assert reading.energy_j == pytest.approx(150.78125)
    assert reading.power_w == pytest.approx(7.5390625)
    assert reading.provenance == "estimated" and reading.meter == "cpu-estimate"
    assert "u = process CPU s / (t x cores) = 38.000 / (20.000 x 2) = 0.950" in reading.formula
    assert "EPYC 9755" in reading.formula


def test_estimate_idle_process_pays_the_static_share_and_busy_one_is_capped_at_tdp() -> None:
    clock, cpu = Clock(), [0.0]
    meter = CpuEstimateMeter(CpuTdp(96.0, 96, "given"), cores=2, cpu_s=lambda: cpu[0], clock=clock)
    assert _estimate(meter, clock, cpu, wall_s=10.0, cpu_s=0.0).energy_j == pytest.approx(2.0 * 0.3 * 10)
    assert _estimate(meter, clock, cpu, wall_s=10.0, cpu_s=50.0).energy_j == pytest.approx(2.0 * 10)


def test_choose_meter_estimates_without_counters(tmp_path: Path) -> None:
    meter = choose_meter(_machine(), "cpu", powercap_root=tmp_path)
    assert isinstance(meter, CpuEstimateMeter) and meter.share_w == pytest.approx(7.8125)
    given = choose_meter(_machine(), "cpu", tdp_w=96.0, socket_cores=96, powercap_root=tmp_path)
    assert isinstance(given, CpuEstimateMeter) and given.share_w == pytest.approx(2.0)
    assert given.tdp.source == "given" and given.tdp.threads_per_core == 1.0
    tdp_only = choose_meter(_machine(vm=True), "cpu", tdp_w=256.0, powercap_root=tmp_path)
    assert isinstance(tdp_only, CpuEstimateMeter) and tdp_only.tdp.socket_cores == 128  # cores of the row
    assert tdp_only.share_w == pytest.approx(256.0 * 2 / (128 * 2))


def test_tdp_comes_from_the_chip_table_row_the_report_matches() -> None:
    tdp = cpu_tdp(_machine())  # "AMD EPYC", family 0x1A model 2: Zen 5, represented by the EPYC 9755 row
    turin = bundled_chips().require("CPU: AMD EPYC 9755")
    assert turin.tdp_w is not None and turin.cores is not None
    assert (tdp.chip_key, tdp.tdp_w, tdp.socket_cores) == (turin.key, 500.0, 128)
    assert "microarchitecture guess" in tdp.source and turin.tdp_w.source in tdp.source


def test_vm_share_divides_vcpus_by_the_rows_threads_per_core() -> None:
    vm = cpu_tdp(_machine(vm=True))  # 2 vCPUs of a 128-core, 256-thread socket
    assert vm.threads_per_core == 2.0
    meter = CpuEstimateMeter(vm, cores=2)
    assert meter.share_w == pytest.approx(500 * 2 / 2 / 128)
    bare = cpu_tdp(_machine(vm=False))  # bare metal: 2 physical cores of 128, whatever the SMT ways
    assert CpuEstimateMeter(bare, cores=2).share_w == pytest.approx(500 * 2 / 128)


def test_the_estimate_takes_the_share_decision_of_the_per_chip_figures() -> None:
    """Issue 42 item 1: a measured FP32 GEMM peak above the SMT-sibling datasheet peak (1 core of the
    2-vCPU VM at max boost) rules SMT siblings out, for the energy estimate as for the report's chip
    count: each vCPU a whole core, twice the SMT-sibling share of the socket TDP. A peak within it leaves
    the low count, as without a probe."""
    machine = _machine(vm=True)  # 2 vCPUs of a 128-core, 256-thread Zen 5 socket
    report = match_machine(machine)
    smt = ceiling(clock_peaks(bundled_chips().require("CPU: AMD EPYC 9755"), 1.0), 128.0)
    above, within = smt.flops_per_s * 1.2, smt.flops_per_s * 0.8
    decided = cpu_tdp(machine, measured_flops_per_s=above)
    assert decided.threads_per_core == 1.0 and "whole cores" in decided.source
    assert CpuEstimateMeter(decided, cores=2).share_w == pytest.approx(500 * 2 / 128)
    assert narrowed(report, above).count == pytest.approx(2 / 128)  # the report counts the same share
    for peak in (within, None):
        undecided = cpu_tdp(machine, measured_flops_per_s=peak)
        assert CpuEstimateMeter(undecided, cores=2).share_w == pytest.approx(500 * 2 / 2 / 128)
        assert narrowed(report, peak).count == pytest.approx(2 / 2 / 128)
    meter = choose_meter(machine, "cpu", powercap_root=Path("/nonexistent"), measured_flops_per_s=above)
    assert isinstance(meter, CpuEstimateMeter) and meter.share_w == pytest.approx(500 * 2 / 128)


def test_tdp_share_is_capped_at_whole_sockets_and_unknown_chips_fall_back() -> None:
    milan = cpu_tdp(_machine("Zen 3 (Milan)", model=1))
    assert milan.chip_key == "CPU: AMD EPYC 7763"
    bare_metal = CpuEstimateMeter(milan, cores=256, sockets=2)
    assert bare_metal.share_w == 2 * 280
    fallback = cpu_tdp(_machine("unknown", cores=8, model=0x7F))
    assert CpuEstimateMeter(fallback, cores=8).share_w == pytest.approx(4.0 * 8)
    assert "fallback" in fallback.source and "unknown" in fallback.source and fallback.chip_key == ""


def test_a_windows_energy_divides_by_the_samples_completed_in_it() -> None:
    reading = Energy.of_window(
        energy_j=10.0,
        window_s=4.0,
        provenance="measured",
        meter="rapl",
        formula="counter",
        domains={"package-0": 10.0},
    )
    assert (reading.samples, reading.energy_per_query_j, reading.samples_per_j, reading.power_w) == (
        0,
        0.0,
        0.0,
        2.5,
    )
    record = reading.for_samples(200)
    assert (record.energy_per_query_j, record.samples_per_j, record.power_w) == (0.05, 20.0, 2.5)
    assert record.samples == 200 and record.window_s == 4.0 and dict(record.domains) == {"package-0": 10.0}
    head = Head(status="ok", energy=record)
    assert Head.from_dict(head.to_dict()).energy == record  # the stored form holds every figure
    assert (
        reading.for_samples(0).samples_per_j == 0.0
        and Energy.of_window(energy_j=0.0, window_s=0.0, provenance="estimated", meter="m", formula="f")
        .for_samples(5)
        .samples_per_j
        == 0.0
    )


# ---- polled power -----------------------------------------------------------------------------------


def test_integrate_interpolates_at_the_edges_and_holds_outside() -> None:
    samples = [(1.0, 100.0), (3.0, 300.0)]
    assert integrate_w(samples, 1.0, 3.0) == pytest.approx(400.0)
    assert integrate_w(samples, 2.0, 3.0) == pytest.approx(250.0)  # 200 W at 2 s by interpolation
    assert integrate_w(samples, 0.0, 4.0) == pytest.approx(100.0 + 400.0 + 300.0)
    assert integrate_w([], 0.0, 1.0) == 0.0


def test_power_sampler_thread_samples_until_closed() -> None:
    sampler = PowerSampler(lambda: 50.0, time.monotonic, period_s=0.01)
    start_s = time.monotonic()
    time.sleep(0.1)
    sampler.close()
    energy_j, inside = sampler.energy_j(start_s, time.monotonic())
    assert inside >= 3 and energy_j == pytest.approx(50.0 * (time.monotonic() - start_s), rel=0.2)


# ---- NVML -------------------------------------------------------------------------------------------


class FakeNvml(types.ModuleType):
    """The part of pynvml the meters call; state is set by the test."""

    class NVMLError(Exception):
        pass

    def __init__(self, energy_mj: int | None = 1_000_000, power_mw: int = 60_000):
        super().__init__("pynvml")
        self.energy_mj, self.power_mw = energy_mj, power_mw
        self.used_bytes = 0
        self.calls: list[tuple[str, Any]] = []

    def nvmlInit(self) -> None:
        self.calls.append(("init", None))

    def nvmlShutdown(self) -> None:
        self.calls.append(("shutdown", None))

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        self.calls.append(("index", index))
        return f"handle{index}"

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> str:
        self.calls.append(("uuid", uuid))
        return uuid

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: str) -> int:
        if self.energy_mj is None:
            raise self.NVMLError("Not Supported")
        return self.energy_mj

    def nvmlDeviceGetPowerUsage(self, handle: str) -> int:
        return self.power_mw

    def nvmlDeviceGetMemoryInfo(self, handle: str) -> Any:
        return types.SimpleNamespace(used=self.used_bytes, total=80 * 2**30)


@pytest.fixture
def fake_nvml(monkeypatch: pytest.MonkeyPatch) -> FakeNvml:
    module = FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", module)
    return module


def _gpu(build: Callable[..., GpuMeter], clock: Clock, **options: Any) -> GpuMeter:
    return build("cuda:0", clock=clock, sleep=lambda s: None, poll_s=None, **options)


def test_nvml_energy_counter_and_idle_baseline(fake_nvml: FakeNvml) -> None:
    clock, syncs = Clock(10.0), []
    meter = _gpu(nvml.nvml_meter, clock, sync=lambda: syncs.append(1))
    meter.begin_window("w")
    fake_nvml.energy_mj += 500_000
    clock.now_s = 12.0
    reading = meter.end_window("w")
    assert reading.energy_j == 500.0 and reading.domains == {"gpu0": 500.0}
    assert reading.provenance == "measured" and reading.meter == "nvml"
    assert reading.idle_power_w == 60.0 and reading.idle_subtracted is False
    assert "recorded, not subtracted" in reading.formula and len(syncs) == 2
    meter.close()
    assert fake_nvml.calls[-1] == ("shutdown", None)


def test_nvml_idle_power_can_be_subtracted(fake_nvml: FakeNvml) -> None:
    clock = Clock(10.0)
    meter = _gpu(nvml.nvml_meter, clock, subtract_idle=True)
    meter.begin_window("w")
    fake_nvml.energy_mj += 500_000
    clock.now_s = 12.0
    reading = meter.end_window("w")
    assert reading.energy_j == 500.0 - 60.0 * 2 and reading.domains == {"gpu0": 500.0}
    assert reading.idle_subtracted is True


def test_nvml_without_energy_counter_polls_power(fake_nvml: FakeNvml) -> None:
    fake_nvml.energy_mj = None
    clock = Clock(0.0)
    meter = _gpu(nvml.nvml_meter, clock, idle_s=0.0)
    fake_nvml.power_mw = 100_000
    meter.begin_window("w")
    clock.now_s, fake_nvml.power_mw = 1.0, 200_000
    meter.sample_power()
    clock.now_s, fake_nvml.power_mw = 2.0, 100_000
    reading = meter.end_window("w")
    assert reading.energy_j == pytest.approx(300.0)
    assert reading.provenance == "polled" and "(3 samples)" in reading.formula
    assert reading.idle_power_w is None


def test_nvml_counter_that_did_not_advance_falls_back_to_instant_power(fake_nvml: FakeNvml) -> None:
    clock = Clock(0.0)
    meter = _gpu(nvml.nvml_meter, clock, idle_s=0.0)
    meter.begin_window("w")
    clock.now_s = 0.01
    reading = meter.end_window("w")
    assert reading.provenance == "polled" and reading.energy_j == pytest.approx(0.6)


def test_cuda_visible_devices_maps_to_the_nvml_device(fake_nvml: FakeNvml) -> None:
    nvml.nvml_meter("cuda:0", environ={"CUDA_VISIBLE_DEVICES": "3,1"}, poll_s=None).close()
    nvml.nvml_meter("cuda:1", environ={"CUDA_VISIBLE_DEVICES": "2,GPU-abc"}, poll_s=None).close()
    assert ("index", 3) in fake_nvml.calls and ("uuid", "GPU-abc") in fake_nvml.calls
    with pytest.raises(MeterUnavailable, match="MIG"):
        nvml.nvml_meter("cuda:0", environ={"CUDA_VISIBLE_DEVICES": "MIG-xyz"})


def test_gpu_without_any_vendor_library_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setitem(sys.modules, "amdsmi", None)
    with pytest.raises(MeterUnavailable, match=r"pynvml not importable.*amdsmi not importable"):
        choose_meter(_machine(), "cuda:0", sync=lambda: None)


def test_choose_meter_uses_nvml_for_cuda(fake_nvml: FakeNvml) -> None:
    meter = choose_meter(_machine(), "cuda:0", sync=lambda: None)
    assert isinstance(meter, GpuMeter) and meter.meter == "nvml"
    meter.close()


# ---- amdsmi (untested on hardware) ------------------------------------------------------------------


class FakeAmdSmi(types.ModuleType):
    """The part of amdsmi the meter calls."""

    def __init__(self) -> None:
        super().__init__("amdsmi")
        self.ticks = 1_000_000
        self.shut = False

    def amdsmi_init(self) -> None:
        pass

    def amdsmi_shut_down(self) -> None:
        self.shut = True

    def amdsmi_get_processor_handles(self) -> list[str]:
        return ["gpu-handle-0"]

    def amdsmi_get_energy_count(self, handle: str) -> dict[str, float]:
        return {"energy_accumulator": self.ticks, "counter_resolution": 15.3, "timestamp": 0}

    def amdsmi_get_power_info(self, handle: str) -> dict[str, Any]:
        return {"current_socket_power": 300, "average_socket_power": "N/A"}


def test_amdsmi_energy_accumulator(monkeypatch: pytest.MonkeyPatch) -> None:
    smi = FakeAmdSmi()
    monkeypatch.setitem(sys.modules, "amdsmi", smi)
    clock = Clock(0.0)
    meter = _gpu(amd_gpu.amd_meter, clock)
    meter.begin_window("w")
    smi.ticks += 10_000_000  # x 15.3 uJ = 153 J
    clock.now_s = 1.0
    reading = meter.end_window("w")
    meter.close()
    assert reading.energy_j == pytest.approx(153.0) and reading.provenance == "measured"
    assert reading.meter == "amdsmi" and reading.idle_power_w == 300.0 and smi.shut


def test_the_runs_measured_peak_reaches_the_cell_in_its_spec(tmp_path: Path) -> None:
    """The parent reads the run's best FP32 GEMM (a library's 193.1 GFLOP/s beats the probe's 143.8)
    from the run folder and hands it to the cell in its spec; no probe: None (the low count)."""
    from accelbench.cellspec import CellSpec
    from accelbench.probe.best import machine_peak
    from accelbench.probe.peaks_file import run_fp32_peak, save_peaks
    from tests.unit.report_cases import gemm_peaks

    assert run_fp32_peak(tmp_path) is None
    save_peaks(tmp_path, gemm_peaks())
    assert run_fp32_peak(tmp_path) == pytest.approx(193.1e9)
    assert run_fp32_peak(tmp_path) == machine_peak(gemm_peaks(), "gemm", "fp32").value_per_s  # type: ignore[union-attr]
    assert "measured_fp32_flops_per_s" in CellSpec.__dataclass_fields__
