"""explain(a, b): the essay pair (640 V100 in v0.5 vs 3456 TPU v4 in v1.0) and local results."""

from __future__ import annotations

import math

import pytest

from accelbench.cell.loadgen_body import LoadgenBody
from accelbench.errors import UserError
from accelbench.hardware.chips import bundled_chips
from accelbench.hardware.match import ChipMatch
from accelbench.head import Head
from accelbench.loadgen_figures import LoadgenVerdict
from accelbench.mlperf.history import bundled_history
from accelbench.normalize.explain import RESIDUAL, Explanation, explain, ratio_check
from accelbench.normalize.subjects import from_history, from_result
from accelbench.results import Cell, Result
from accelbench.sections import TrainingFigures
from accelbench.training.body import TrainingBody

V100_ID = "v0.5/nvidia/dgx1_multi_ngc18.11_mxnet"
TPU_ID = "v1.0/google/tpu-v4-6912-TF"
RAW = 6.242 / 0.229  # 27.258
PER_CHIP = RAW / (3456 / 640)  # 5.048
NODE = 3.61 / 2.47  # 1.4615: gate delay 12 nm -> 7 nm


def essay() -> Explanation:
    history, chips = bundled_history(), bundled_chips()
    return explain(
        from_history(history.require(V100_ID), chips), from_history(history.require(TPU_ID), chips)
    )


def test_essay_pair_ratio_chips_and_per_chip() -> None:
    explanation = essay()
    assert explanation.ratio.central == pytest.approx(RAW) and round(RAW, 1) == 27.3
    chips = explanation.main.factors[0]
    assert chips.name == "chips" and chips.value.central == pytest.approx(5.4)
    assert chips.remaining.central == pytest.approx(PER_CHIP) and round(PER_CHIP, 2) == 5.05


def test_essay_pair_per_transistor_range_covers_22_and_41_billion() -> None:
    transistors = essay().main.factors[1]
    assert transistors.name == "transistors per chip"
    assert transistors.value.central == pytest.approx(22 / 21.1) and transistors.value.high == pytest.approx(
        41 / 21.1
    )
    per_transistor = transistors.remaining
    assert (
        per_transistor.high == pytest.approx(PER_CHIP * 21.1 / 22) and round(per_transistor.high, 2) == 4.84
    )
    assert per_transistor.low == pytest.approx(PER_CHIP * 21.1 / 41) and round(per_transistor.low, 1) == 2.6
    assert transistors.provenance == "paper"


def test_essay_pair_node_credit_and_residual() -> None:
    node, residual = essay().main.factors[2:]
    assert node.value.central == pytest.approx(NODE) and round(node.value.central, 2) == 1.46
    assert node.a is not None and node.a.central == 3.61 and node.b is not None and node.b.central == 2.47
    assert residual.name == RESIDUAL
    assert residual.value.central == pytest.approx(PER_CHIP * 21.1 / 22 / NODE)  # 3.31x at 22 B
    assert residual.value.low == pytest.approx(PER_CHIP * 21.1 / 41 / NODE)  # 1.78x at 41 B


def test_factors_multiply_back_to_the_measured_ratio() -> None:
    explanation = essay()
    for decomposition in explanation.decompositions:
        product = math.prod(f.value.central for f in decomposition.factors)
        assert product == pytest.approx(explanation.ratio.central, rel=1e-12)
        assert ratio_check(decomposition) == pytest.approx(RAW, rel=1e-12)
        low = math.prod(f.value.low for f in decomposition.factors[:-1]) * decomposition.residual.value.high
        assert low == pytest.approx(RAW, rel=1e-12)  # residual range mirrors the others' range


def test_per_mm2_and_per_watt_variants() -> None:
    by_per = {d.per: d for d in essay().decompositions}
    mm2 = by_per["mm2"].factors
    assert mm2[1].value.central == pytest.approx(600 / 815)
    assert mm2[1].remaining.central == pytest.approx(PER_CHIP * 815 / 600)  # 6.86x per mm2
    watt = by_per["watt"].factors
    assert watt[1].value.central == pytest.approx(192 / 300) and watt[1].value.high == pytest.approx(
        340 / 300
    )
    assert watt[1].remaining.central == pytest.approx(PER_CHIP * 300 / 192)  # 7.89x per TDP watt
    assert watt[2].name == "process node (switching energy)"
    assert watt[2].value.central == pytest.approx(0.13 / 0.11)


def test_gains_and_cmos_reading() -> None:
    explanation = essay()
    assert explanation.gains["chip"].central == pytest.approx(PER_CHIP)
    assert explanation.gains["usd_cloud"].central == pytest.approx(
        (640 * 3.06 * 6.242) / (3456 * 3.22 * 0.229)
    )
    assert explanation.cmos is not None
    potential = explanation.cmos.potential_gain
    assert explanation.cmos.specialization_return.central == pytest.approx(RAW / potential.central)
    assert potential.central == pytest.approx(5.4 * 1.503, rel=1e-3)


def test_warnings_name_scale_rules_and_category() -> None:
    warnings = " | ".join(essay().warnings)
    assert "scales differ 5.4x (640 vs 3456 chips)" in warnings
    assert "74.9%" in warnings and "75.9%" in warnings
    assert "v0.6 changed how overhead time is counted" in warnings
    assert "Reference Convergence Points" in warnings
    assert "'preview' category" in warnings


def test_same_round_same_scale_has_no_rule_or_scale_warning() -> None:
    history, chips = bundled_history(), bundled_chips()
    a = from_history(history.require("v3.0/nvidia/dgxh100_ngc23.04_mxnet"), chips)
    b = from_history(history.require("v3.0/dell/XE9680x8H100-SXM-80GB"), chips)
    explanation = explain(a, b)
    assert not any("scales differ" in w or "rules changed" in w for w in explanation.warnings)
    assert (
        explanation.main.factors[1].value.central == 1.0 and explanation.main.factors[2].value.central == 1.0
    )


def test_unknown_chip_folds_into_the_residual() -> None:
    history, chips = bundled_history(), bundled_chips()
    a = from_history(history.require("v3.1/xfusion/G5500V7x8xL40S"), chips)
    b = from_history(history.require("v4.0/nvidia/h200_ngc24.04_mxnet"), chips)
    explanation = explain(a, b)
    transistors = explanation.main.factors[1]
    assert transistors.value.central == 1.0 and "folded into the residual" in transistors.note
    assert ratio_check(explanation.main) == pytest.approx(explanation.ratio.central, rel=1e-12)
    assert explanation.cmos is None


def local(qps: float, workload: str = "resnet50", device: str = "cpu") -> Result:
    verdict = LoadgenVerdict("offline", True, (), qps, 100, "quick", False, "logs")
    cell = Cell(workload, "torch-eager", "offline", device, "tiny")
    return Result("run1", cell, Head("ok"), LoadgenBody(loadgen=verdict), driver="loadgen")


def test_two_local_results_compare_per_chip_share() -> None:
    chips = bundled_chips()
    genoa = ChipMatch(chips.require("CPU: AMD EPYC 9654"), 2 / 96, "microarchitecture guess", "AMD EPYC")
    turin = ChipMatch(chips.require("CPU: AMD EPYC 9755"), 2 / 128, "microarchitecture guess", "AMD EPYC")
    a, b = from_result("run1/a", local(100.0), genoa), from_result("run2/b", local(150.0), turin)
    explanation = explain(a, b)
    assert explanation.ratio.central == pytest.approx(1.5)
    assert explanation.main.factors[0].value.central == pytest.approx(96 / 128)  # share of a socket
    assert explanation.main.factors[0].remaining.central == pytest.approx(1.5 * 128 / 96)
    assert ratio_check(explanation.main) == pytest.approx(1.5, rel=1e-12)
    assert explanation.gains["chip"].central == pytest.approx(2.0)


def test_incomparable_subjects_are_refused() -> None:
    chips = bundled_chips()
    match = ChipMatch(chips.require("CPU: AMD EPYC 9654"), 2 / 96, "model string", "AMD EPYC 9654")
    resnet, bert = from_result("r/a", local(10.0), match), from_result("r/b", local(10.0, "bert-base"), match)
    with pytest.raises(UserError, match="different work"):
        explain(resnet, bert)
    entry = from_history(bundled_history().require(V100_ID), chips)
    with pytest.raises(UserError, match="time-to-train"):
        explain(entry, resnet)
    with pytest.raises(UserError, match="no measured throughput"):
        from_result("r/c", Result("run1", Cell("resnet50", "x", "offline"), Head("crashed")), match)


def test_result_figures_for_show_json() -> None:
    from accelbench.hardware.detect import Machine, machine_to_dict
    from accelbench.normalize.lookup import result_figures

    machine = Machine(
        cpu_model="AMD EPYC", cpu_vendor="AuthenticAMD", cpu_family=0x19, cpu_model_number=0x11,
        cpu_stepping=1, microarchitecture="Zen 4 (Genoa)", model_hidden=True, logical_cores=2,
        physical_cores=2, sockets=1, isa_flags=(), caches=(), mem_bytes=2**34, os_name="Linux",
        kernel="6.1", python_version="3.11.9",
    )  # fmt: skip
    found = result_figures(local(100.0), machine_to_dict(machine), bundled_chips())
    document = {f.per: f.to_dict() for f in found}
    assert document["chip"]["value"]["central"] == pytest.approx(2 / 96 / 100.0)  # socket share x s/sample
    assert (
        document["transistor"]["provenance"] == "estimate"
    )  # Genoa transistors: CCD lower bound + IOD guess
    assert (
        result_figures(Result("run1", Cell("resnet50", "x", "offline"), Head("crashed")), {}, bundled_chips())
        == ()
    )


def trained(olympic_mean_s: float | None, stack: str, status: str = "ok") -> Result:
    cell = Cell("digits-resnet", stack, "train-to-quality", "cpu", "tiny")
    training = {"olympic_mean_s": olympic_mean_s, "nproc": 1, "energy_j": 12.0}
    return Result(
        "run1",
        cell,
        Head(status),
        TrainingBody(TrainingFigures.from_dict(training)),
        driver="train-to-quality",
    )


def test_two_training_results_compare_time_to_train() -> None:
    chips = bundled_chips()
    match = ChipMatch(chips.require("CPU: AMD EPYC 9755"), 2 / 128, "microarchitecture guess", "AMD EPYC")
    eager = from_result("r/eager", trained(3.0, "torch-eager"), match)
    inductor = from_result("r/inductor", trained(2.0, "torch-inductor"), match)
    assert eager.kind == "time-to-train" and eager.seconds_per_work == 3.0
    assert eager.energy_j is None  # no energy record: the section's estimate is not counted as measured
    explanation = explain(eager, inductor)
    assert explanation.ratio.central == pytest.approx(1.5)
    assert explanation.main.factors[0].value.central == pytest.approx(1.0)  # same chip share
    with pytest.raises(UserError, match="did not train to quality"):
        from_result("r/x", trained(None, "torch-eager", "quality_failed"), match)


def test_a_vm_count_range_widens_the_chips_factor_across_chips_and_cancels_on_one() -> None:
    """A VM's count on an SMT chip is [vCPUs as threads, vCPUs as cores]: across two chips it is a range in
    the chips factor; on one chip both counts rest on the same assumption and their ratio is exact."""
    chips = bundled_chips()
    vm = ChipMatch(chips.require("CPU: AMD EPYC 9755"), 2 / 2 / 128, "microarchitecture guess", "AMD EPYC",
                   count_high=2 / 128)  # fmt: skip
    other = ChipMatch(chips.require("CPU: AMD EPYC 9654"), 2 / 96, "model string", "AMD EPYC 9654")
    on_vm, elsewhere = from_result("r/vm", local(10.0), vm), from_result("r/metal", local(10.0), other)
    assert (on_vm.counted.low, on_vm.counted.central, on_vm.counted.high) == pytest.approx(
        (1 / 128, 1 / 128, 2 / 128)
    )
    chips_factor = explain(elsewhere, on_vm).main.factors[0]
    assert chips_factor.value.central == pytest.approx((1 / 128) / (2 / 96))
    assert (chips_factor.value.low, chips_factor.value.high) == pytest.approx(
        ((1 / 128) / (2 / 96), (2 / 128) / (2 / 96))
    )
    faster = from_result("r/vm2", local(20.0), vm)
    same = explain(on_vm, faster).main.factors[0]
    assert same.value.is_point and same.value.central == pytest.approx(1.0)
