"""Normalized figures and the node credit, pinned against hand-computed values (the essay pair)."""

from __future__ import annotations

import pytest

from accelbench.hardware.chips import bundled_chips
from accelbench.hardware.prices import chip_price
from accelbench.mlperf.history import bundled_history
from accelbench.normalize.cmos import NodeOutOfTable, node_value
from accelbench.normalize.factors import (
    accelerator_time,
    figures,
    gain,
    node_credit,
    per_chip_quantity,
    per_cloud_dollar,
    per_measured_watt,
)
from accelbench.normalize.subjects import Subject, from_history
from accelbench.ranges import Range

V100_ID = "v0.5/nvidia/dgx1_multi_ngc18.11_mxnet"
TPU_ID = "v1.0/google/tpu-v4-6912-TF"
V100_S = 6.242 * 60  # 374.52 s on 640 V100
TPU_S = 0.229 * 60  # 13.74 s on 3456 TPU v4


def essay() -> tuple[Subject, Subject]:
    history, chips = bundled_history(), bundled_chips()
    return from_history(history.require(V100_ID), chips), from_history(history.require(TPU_ID), chips)


def test_accelerator_time_is_time_times_chips() -> None:
    v100, tpu = essay()
    assert accelerator_time(v100).value.central == pytest.approx(640 * V100_S)  # 239,692.8 chip-s
    assert accelerator_time(tpu).value.central == pytest.approx(3456 * TPU_S)  # 47,485.44 chip-s
    assert gain(accelerator_time(v100), accelerator_time(tpu)).central == pytest.approx(5.0477, abs=1e-4)


def test_per_transistor_gain_spans_the_disputed_tpu_v4_count() -> None:
    v100, tpu = essay()
    a, b = per_chip_quantity(v100, "transistor"), per_chip_quantity(tpu, "transistor")
    assert a is not None and b is not None
    assert a.value.central == pytest.approx(640 * 21.1e9 * V100_S)
    assert b.denominator.low == pytest.approx(3456 * 22e9) and b.denominator.high == pytest.approx(
        3456 * 41e9
    )
    per_transistor = gain(a, b)
    assert per_transistor.high == pytest.approx(640 * 21.1 * 6.242 / (3456 * 22 * 0.229))  # 4.841 at 22 B
    assert per_transistor.low == pytest.approx(640 * 21.1 * 6.242 / (3456 * 41 * 0.229))  # 2.598 at 41 B
    assert per_transistor.central == pytest.approx(4.8412, abs=1e-4)
    assert b.provenance == "paper"


def test_per_mm2_and_per_tdp_watt_gains() -> None:
    v100, tpu = essay()
    per_mm2 = gain(per_chip_quantity(v100, "mm2"), per_chip_quantity(tpu, "mm2"))  # type: ignore[arg-type]
    assert per_mm2.central == pytest.approx(640 * 815 * 6.242 / (3456 * 600 * 0.229))  # 6.857 at < 600 mm2
    assert per_mm2.high == pytest.approx(640 * 815 * 6.242 / (3456 * 593 * 0.229))  # 6.937 at 593 mm2
    per_watt = gain(per_chip_quantity(v100, "tdp_w"), per_chip_quantity(tpu, "tdp_w"))  # type: ignore[arg-type]
    assert per_watt.central == pytest.approx(7.887, abs=1e-3)  # 192 W
    assert per_watt.low == pytest.approx(4.454, abs=1e-3)  # 340 W
    joules = per_chip_quantity(v100, "tdp_w")
    assert (
        joules is not None
        and joules.unit == "J"
        and joules.value.central == pytest.approx(640 * 300 * V100_S)
    )


def test_per_cloud_dollar_uses_the_dated_on_demand_prices() -> None:
    v100, tpu = essay()
    a, b = per_cloud_dollar(v100), per_cloud_dollar(tpu)
    assert a is not None and b is not None and a.unit == "USD"
    assert a.value.central == pytest.approx(640 * 3.06 / 3600 * V100_S)  # $203.74 for the run
    assert b.value.central == pytest.approx(3456 * 3.22 / 3600 * TPU_S)  # $42.47
    assert b.provenance == "estimate" and "2026" not in b.source  # TPU price: low-medium confidence, undated
    price = chip_price("NVIDIA H100 SXM")
    assert price is not None and len(price.rows) == 2  # the capacity block is not on-demand
    assert price.usd_per_accelerator_s.low * 3600 == pytest.approx(6.88)
    assert price.usd_per_accelerator_s.high * 3600 == pytest.approx(12.29)


def test_purchase_price_and_measured_energy_are_optional() -> None:
    v100, tpu = essay()
    assert per_chip_quantity(tpu, "usd") is None  # TPUs are not sold
    bought = per_chip_quantity(v100, "usd")
    assert bought is not None and bought.provenance == "estimate" and bought.unit == "USD*s"
    assert per_measured_watt(v100) is None
    measured = Subject("x", "x", "throughput", "w", 0.01, "query", None, 1.0, "test", energy_j=0.5)
    figure = per_measured_watt(measured)
    assert (
        figure is not None
        and figure.value.central == 0.5
        and figure.denominator.central == pytest.approx(50.0)
    )
    assert [f.per for f in figures(measured)] == ["chip", "measured_w"]


def test_figures_of_a_chipless_entry_are_only_per_chip() -> None:
    entry = bundled_history().require("v3.1/xfusion/G5500V7x8xL40S")  # chip 'L40S' has no row
    subject = from_history(entry, bundled_chips())
    assert subject.chip is None and [f.per for f in figures(subject)] == ["chip"]


def test_node_credit_12_to_7_nm_is_the_gate_delay_ratio() -> None:
    credit = node_credit(12, 7)
    assert credit.value.central == pytest.approx(3.61 / 2.47)  # 1.4615
    assert credit.old.method == credit.new.method == "table"
    energy = node_credit(12, 7, "switch_energy_fj")
    assert energy.value.central == pytest.approx(0.13 / 0.11)  # 1.1818


def test_nodes_between_table_nodes_are_interpolated_log_log() -> None:
    six = node_value(6, "gate_latency_ps")
    # ln d(6) = ln 2.47 + ln(6/7)/ln(5/7) x ln(2.16/2.47) -> 2.3228 ps
    assert six.value == pytest.approx(2.3228, abs=1e-4)
    assert six.method == "interpolated log-log between 5 and 7 nm"
    assert node_credit(7, 6).value.central == pytest.approx(2.47 / 2.3228, abs=1e-4)


def test_a_node_range_gives_a_credit_range() -> None:
    credit = node_credit(Range(12, 16, 12), 7)
    assert credit.value.central == pytest.approx(3.61 / 2.47)
    assert credit.value.high == pytest.approx(6.12 / 2.47)


@pytest.mark.parametrize("node", [4.0, 3.0, 250.0])
def test_nodes_outside_the_table_are_refused(node: float) -> None:
    with pytest.raises(NodeOutOfTable, match="outside the CMOS table"):
        node_credit(12, node)


def test_each_figure_names_the_source_class_of_its_denominator() -> None:
    v100, tpu = essay()
    by_per = {f.per: f for f in figures(v100)}
    assert by_per["chip"].source_class == "measured"  # a count of GPUs, not a chip fact
    assert by_per["transistor"].source_class == "review"  # chips.csv quotes NVIDIA through Epoch AI
    assert by_per["usd"].source_class == "estimate"  # Microway's analysis, not an NVIDIA price
    assert by_per["usd_cloud"].source_class == "review"  # dated list prices read from compilations
    tpu_watt = per_chip_quantity(tpu, "tdp_w")
    assert tpu_watt is not None and tpu_watt.source_class == "vendor datasheet"  # Google's TPU v4 docs
    chips = bundled_chips()
    genoa = chips.require("CPU: AMD EPYC 9654")
    share = Subject("x", "x", "throughput", "w", 0.01, "query", genoa, 2 / 96, "2 whole cores")
    cpu = {f.per: f for f in figures(share)}
    assert cpu["chip"].source_class == genoa.cores.source_class == "vendor datasheet"  # type: ignore[union-attr]
    assert cpu["tdp_w"].source_class == "vendor datasheet"  # AMD's product page, not the pre-launch leak
