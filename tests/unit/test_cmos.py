"""The CMOS-potential model: Rankine's published example, the essay pair, refusals."""

from __future__ import annotations

import math

import pytest

from accelbench.hardware.chips import Chip, Fact, bundled_chips
from accelbench.normalize.cmos import (
    NodeOutOfTable,
    PotentialUnavailable,
    cmos_potential,
    cmos_table,
    specialization_return,
)
from accelbench.ranges import Range


def chip(**facts: float) -> Chip:
    """A chip whose facts are exact datasheet figures (SI units)."""
    made = {name: Fact(Range.point(value), "datasheet", "test") for name, value in facts.items()}
    return Chip(key="test chip", vendor="test", name="test", kind="accelerator", source="test", **made)  # type: ignore[arg-type]


def test_table_covers_5_to_180_nm() -> None:
    nodes = [n.node_nm for n in cmos_table()]
    assert nodes[0] == 5 and nodes[-1] == 180 and len(nodes) == 20


def test_rankine_readme_example_is_reproduced() -> None:
    # Rankine README: a 40 mm2 45 nm chip at 1000 MHz and 300 W has 159.97 million transistors,
    # throughput 1.59973732344e+11 (transistors x MHz) and throughput per power 160256487.303.
    potential = cmos_potential(chip(die_area_mm2=40, process_node_nm=45, tdp_w=300, clock_hz=1e9))
    assert potential.transistors.central == pytest.approx(159.97e6, rel=1e-4)
    assert potential.throughput.central / 1e6 == pytest.approx(1.59973732344e11, rel=1e-9)  # Hz, not MHz
    assert potential.power_w.central == pytest.approx(1.59973732344e11 / 160256487.303, rel=1e-9)
    assert potential.limited_by == "transistors"
    assert potential.extrapolated == ()


def test_v100_is_tdp_limited_and_its_potential_matches_the_hand_computation() -> None:
    v100 = bundled_chips().require("NVIDIA V100")
    potential = cmos_potential(v100)
    # 12 nm bracket (22-12 nm): exp(20.0141471218) x 300^0.557376653843 / 1.533 GHz = 7.712e9 < 21.1e9;
    # 1.533 GHz: the clock of the 15.7 TFLOPS FP32 datasheet peak (the central of the 1.455-1.533 GHz range)
    effective = math.exp(20.0141471218) * 300**0.557376653843 / 1.533
    assert potential.effective_transistors.central == pytest.approx(effective)
    assert effective == pytest.approx(7.712e9, rel=1e-3)
    assert potential.throughput.central == pytest.approx(effective * 1.533e9)
    assert potential.limited_by == "tdp"
    assert potential.provenance == "estimate"  # the clock is not in the shared data
    assert potential.extrapolated == ("die_area_mm2",)  # 815 mm2 > 600 mm2 fitted


def test_tpu_v4_potential_range_follows_its_disputed_tdp() -> None:
    tpu = bundled_chips().require("Google TPU v4")
    potential = cmos_potential(tpu)
    # 10-5 nm bracket: exp(21.4891760308) x TDP^0.401658287972 / 1.05 GHz, x 1.05e9 Hz
    at_192 = math.exp(21.4891760308) * 192**0.401658287972
    at_340 = math.exp(21.4891760308) * 340**0.401658287972
    assert potential.throughput.central == pytest.approx(at_192 * 1e9)  # TDP-limited: clock cancels
    assert potential.throughput.high == pytest.approx(at_340 * 1e9)
    assert set(potential.extrapolated) == {"tdp_w", "process_node_nm"}


def test_essay_pair_potential_gain_and_specialization_return() -> None:
    table = bundled_chips()
    v100, tpu = cmos_potential(table.require("NVIDIA V100")), cmos_potential(table.require("Google TPU v4"))
    per_chip_potential = tpu.throughput / v100.throughput
    hand = math.exp(21.4891760308) * 192**0.401658287972 / (math.exp(20.0141471218) * 300**0.557376653843)
    assert per_chip_potential.central == pytest.approx(hand)
    assert hand == pytest.approx(1.503, abs=1e-3)
    measured_per_chip = Range.point(640 * 6.242 / (3456 * 0.229))  # 5.05x
    returned = specialization_return(measured_per_chip, per_chip_potential)
    assert returned.central == pytest.approx(5.0477 / 1.503, rel=1e-3)  # ~3.36x
    assert returned.low < returned.central  # a higher TPU v4 TDP means more potential, less return


def test_missing_facts_and_unsupported_nodes_are_refused() -> None:
    with pytest.raises(PotentialUnavailable, match="no clock_hz"):
        cmos_potential(bundled_chips().require("Intel Gaudi2"))
    with pytest.raises(NodeOutOfTable):
        cmos_potential(chip(transistors=1e9, process_node_nm=3, tdp_w=100, clock_hz=1e9))
