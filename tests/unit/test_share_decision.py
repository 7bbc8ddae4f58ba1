"""The share of a chip decided from evidence, at the clock its cores reach (issue 42): the cloud CPU
families' published clocks, the 2-vCPU EPYC VM of the issue, and a planted over-claim no model explains."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from accelbench.errors import UserError
from accelbench.hardware.chips import SOURCE_CLASSES, bundled_chips, load_chips
from accelbench.hardware.detect import Machine, machine_to_dict
from accelbench.hardware.match import match_machine, narrowed
from accelbench.hardware.share import ceiling, clock_aware, clock_peaks, decide
from accelbench.normalize.cell_figures import cell_figures, shares_above
from accelbench.workloads.flops import WorkloadCost
from tests.unit.report_cases import GFLOP, gemm_peaks, result
from tests.unit.test_chip_match import _machine

# (key, cores, base GHz, all-core boost GHz or None, max boost GHz, FP32 FLOP/cycle): AMD's and Intel's own
# spec pages (as scraped in felixsteinke/cpu-spec-dataset), the Arm parts' row sources.
CLOUD_CPUS = [
    ("CPU: AMD EPYC 7742", 64, 2.25, None, 3.4, 32),  # Zen 2 (Rome)
    ("CPU: AMD EPYC 7763", 64, 2.45, None, 3.5, 32),  # Zen 3 (Milan)
    ("CPU: AMD EPYC 9654", 96, 2.4, 3.55, 3.7, 32),  # Zen 4 (Genoa)
    ("CPU: AMD EPYC 9754", 128, 2.25, 3.1, 3.1, 32),  # Zen 4c (Bergamo)
    ("CPU: AMD EPYC 9755", 128, 2.7, None, 4.1, 64),  # Zen 5 (Turin), estimates
    ("CPU: Intel Xeon Platinum 8380", 40, 2.3, None, 3.4, 64),  # Ice Lake-SP
    ("CPU: Intel Xeon Platinum 8480+", 56, 2.0, None, 3.8, 64),  # Sapphire Rapids
    ("CPU: Intel Xeon Platinum 8592+", 64, 1.9, None, 3.9, 64),  # Emerald Rapids, a leaked sample's clocks
    ("CPU: Intel Xeon 6980P", 128, 2.0, 3.2, 3.9, 64),  # Granite Rapids, a review's copy of Intel's table
    ("CPU: AWS Graviton2", 64, 2.5, None, 2.5, 16),
    ("CPU: AWS Graviton3", 64, 2.6, None, 2.6, 32),
    ("CPU: AWS Graviton4", 96, 2.8, None, 2.8, 32),
    ("CPU: Ampere Altra Q80-30", 80, 3.0, None, 3.0, 16),
    ("CPU: AmpereOne 192-core", 192, 3.0, None, 3.0, 16),  # AmpereOne, review figures
]


@pytest.mark.parametrize(("key", "cores", "base", "all_core", "top", "per_cycle"), CLOUD_CPUS)
def test_cloud_cpu_families_carry_their_published_clocks(
    key: str, cores: int, base: float, all_core: float | None, top: float | None, per_cycle: int
) -> None:
    chip = bundled_chips().require(key)
    assert clock_aware(chip) and chip.cores is not None and chip.cores.value.central == cores
    peaks = {p.name: p for p in clock_peaks(chip, 2)}
    assert peaks["base"].flops_per_s == pytest.approx(2 * base * 1e9 * per_cycle)
    assert ("all-core boost" in peaks) == (all_core is not None)
    assert ("max boost" in peaks) == (top is not None)
    if top is not None:
        assert peaks["max boost"].flops_per_s == pytest.approx(2 * top * 1e9 * per_cycle)
        assert ceiling(tuple(peaks.values()), cores).name == "max boost"  # 2 of many cores: few busy
    assert all(p.source_class in SOURCE_CLASSES for p in peaks.values())


def test_vendor_pages_replace_leaks_and_estimates_keep_their_class() -> None:
    """Issue 42 item 5: the EPYC 9654's TDP and price come from AMD's page, no longer a leak and a blog."""
    chip = bundled_chips().require("CPU: AMD EPYC 9654")
    assert chip.tdp_w is not None and chip.tdp_w.source_class == "vendor datasheet"
    assert "leak" not in chip.tdp_w.source.split("(replaces")[0] and chip.tdp_w.value.central == 360
    assert chip.price_usd is not None and chip.price_usd.value.central == 11805
    assert chip.price_usd.source_class == "vendor datasheet"
    assert chip.fp32_flop_per_cycle is not None and chip.fp32_flop_per_cycle.source_class == "estimate"
    estimates = [
        getattr(c, name)
        for c in bundled_chips()
        for name in ("tdp_w", "clock_hz", "max_boost_hz", "price_usd")
        if getattr(c, name) is not None and getattr(c, name).provenance == "estimate"
    ]
    assert estimates and all(f.source_class == "estimate" for f in estimates)


def _genoa_vm(threads_per_core: int = 1) -> Machine:
    """The issue's VM: 2 vCPUs of a hidden EPYC, Zen 4; the guest shows 2 cores of 1 thread."""
    vm = _machine("AMD EPYC", "Zen 4 (Genoa)")
    return dataclasses.replace(vm, physical_cores=2 // threads_per_core)


def test_the_issues_vm_is_whole_cores_at_max_boost_and_not_suspect() -> None:
    """Measured 198 GFLOP/s: above 1 core x 3.7 GHz x 32 = 118.4 (SMT siblings), so whole cores, judged
    at 2 x 3.7 x 32 = 236.8 GFLOP/s (84%), not 2/192 of the socket at base (77 GFLOP/s, 257%)."""
    match = narrowed(match_machine(_genoa_vm()), 198 * GFLOP)
    decision = match.decision
    assert decision is not None and decision.model == "whole cores" and not decision.failed
    assert match.count == pytest.approx(2 / 96) and match.count_high is None
    assert decision.ceiling.name == "max boost"
    assert decision.ceiling.flops_per_s == pytest.approx(236.8 * GFLOP)
    assert {p.name: round(p.flops_per_s / GFLOP, 1) for p in decision.peaks} == {
        "base": 153.6,
        "all-core boost": 227.2,
        "max boost": 236.8,
    }
    assert "SMT siblings are ruled out" in match.count_basis and "max boost 3.70 GHz" in match.count_basis
    assert "not proof" in match.count_basis  # the guest's 1 thread per core is weighed, not trusted


def test_without_evidence_both_models_remain_and_a_sibling_guest_is_believed() -> None:
    undecided = narrowed(match_machine(_genoa_vm()), 100 * GFLOP)  # below 118.4: SMT still possible
    assert undecided.decision is not None
    assert undecided.decision.model == "SMT siblings (whole cores not ruled out)"
    assert (undecided.count, undecided.count_high) == pytest.approx((1 / 96, 2 / 96))
    assert undecided.decision.ceiling.flops_per_s == pytest.approx(236.8 * GFLOP)  # whole cores: the larger
    siblings = narrowed(match_machine(_genoa_vm(threads_per_core=2)), 100 * GFLOP)
    assert siblings.decision is not None and siblings.decision.model == "SMT siblings"
    overruled = narrowed(match_machine(_genoa_vm(threads_per_core=2)), 198 * GFLOP)
    assert overruled.decision is not None and overruled.decision.model == "whole cores"


def test_a_decision_names_the_assumption_that_failed_when_no_model_explains_the_peak() -> None:
    chip = bundled_chips().require("CPU: AMD EPYC 9654")
    decision = decide(chip, 1 / 96, 2 / 96, 260 * GFLOP, 1.0)
    assert decision.model == "whole cores" and "236.8 GFLOP/s" in decision.failed
    assert "chip match (CPU: AMD EPYC 9654) or its FP32 FLOP/cycle is wrong" in decision.failed


def _documents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, qps: tuple[float, ...], probe: float):
    cost = WorkloadCost("resnet50", "tiny", 10**9, 10**7, 100.0, "synthetic")  # 1 GFLOP per sample
    monkeypatch.setattr("accelbench.variants.cost.workload_cost", lambda *a, **k: cost)
    results = [result(f"stack{n}", "offline", qps=q) for n, q in enumerate(qps)]
    peaks = gemm_peaks(probe, probe)
    found = cell_figures(results, machine_to_dict(_genoa_vm()), peaks, tmp_path)
    return [found[r.cell.key].to_dict()["roofline"] for r in results], found


def test_the_report_documents_carry_the_clock_the_model_and_no_share_above_100(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (roofline,), documents = _documents(tmp_path, monkeypatch, (190.0,), 198.0)
    assert roofline["share_of_datasheet_peak"]["central"] == pytest.approx(190 / 236.8)
    assert not roofline["datasheet_suspect"] and roofline["datasheet_clock"] == "max boost"
    assert roofline["share_decision"]["model"] == "whole cores"
    assert "at max boost 3.70 GHz (source class estimate: 2 cores" in roofline["datasheet_source"]
    assert shares_above(documents.values()) == []


def test_a_planted_over_claim_is_marked_with_the_assumption_that_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stack that claims 250 GFLOP/s on a machine whose probe measured 198: above the measured peak and
    above whole cores at max boost (236.8): both marks, and the datasheet one says no model explains it."""
    (cheat, honest), _ = _documents(tmp_path, monkeypatch, (250.0, 150.0), 198.0)
    assert cheat["suspect"] and cheat["datasheet_suspect"]
    assert cheat["datasheet_suspect_reason"].startswith("no model explains it") is False  # the probe is fine
    assert not honest["suspect"] and not honest["datasheet_suspect"]
    (beyond,), _ = _documents(tmp_path, monkeypatch, (250.0,), 250.0)  # a probe itself above every model
    assert beyond["datasheet_suspect"] and beyond["datasheet_suspect_reason"].startswith("no model explains")


@pytest.mark.parametrize(
    ("fact", "message"),
    [
        ('{ value = 5000, provenance = "estimate", class = "vendor datasheet" }', "an estimate has class"),
        ('{ value = 5000, provenance = "datasheet", class = "rumour" }', "class 'rumour' is not one of"),
    ],
)
def test_a_chips_file_cannot_dress_an_estimate_as_a_vendor_fact(
    tmp_path: Path, fact: str, message: str
) -> None:
    """A vendor's chips file that raises its own clock must say where the figure comes from: an estimate
    cannot claim the vendor-datasheet class, and classes are a closed list."""
    path = tmp_path / "chips.toml"
    path.write_text(f'[[amend]]\nkey = "CPU: AMD EPYC 9654"\nmax_boost_mhz = {fact}\n')
    with pytest.raises(UserError, match=message):
        load_chips(path)
    review = '{ value = 3700, class = "review" }'
    path.write_text(f'[[amend]]\nkey = "CPU: AMD EPYC 9654"\nmax_boost_mhz = {review}\n')
    chip = load_chips(path).require("CPU: AMD EPYC 9654")
    assert chip.max_boost_hz is not None and chip.max_boost_hz.source_class == "review"


def test_gpu_boost_clocks_carry_their_source_class() -> None:
    """Issue 42 item 2 for GPUs: the H100 SXM's boost clock is the FP32 peak's own (16,896 lanes x 2 FLOP
    x 1.98 GHz = 66.9 TFLOPS, NVIDIA's final table as a review quotes it); the H200's is inferred from
    the same die, an estimate. The datasheet peak names the clock and its class."""
    from accelbench.normalize.peak_share import datasheet_peak

    chips = bundled_chips()
    h100, h200 = chips.require("NVIDIA H100 SXM"), chips.require("NVIDIA H200 SXM")
    assert h100.max_boost_hz is not None and h100.max_boost_hz.source_class == "review"
    assert 16896 * 2 * h100.max_boost_hz.value.central == pytest.approx(66.9e12, rel=1e-3)
    assert h200.max_boost_hz is not None and h200.max_boost_hz.source_class == "estimate"
    found = datasheet_peak(h100, 1.0)
    assert found is not None and "at 1.98 GHz boost (source class review)" in found[1]
    a100 = chips.require("NVIDIA A100 SXM 40GB")  # deviceQuery on a cluster's A100: the vendor's 1410 MHz
    assert a100.max_boost_hz is not None and a100.max_boost_hz.source_class == "independent measurement"
    assert 6912 * 2 * a100.max_boost_hz.value.central == pytest.approx(19.5e12, rel=3e-3)
    assert a100.base_clock_hz is not None and a100.base_clock_hz.value.central == 1095e6
