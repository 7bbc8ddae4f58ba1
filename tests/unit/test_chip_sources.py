"""Issue 42, the chips table's sourced facts: the GPU clocks of P100, V100, T4, MI250X, MI300X and B200 (its
sources disagree: a range), Graviton4, EPYC 9755 / 9965, Xeon Platinum 8592+ and Azure Cobalt 100. Each value
below was read in the source its fact names; a fact no source gave is absent (not recalled) and the row's
notes say so."""

from __future__ import annotations

import dataclasses

import pytest

from accelbench.hardware.chips import FIELDS, SOURCE_CLASSES, Chip, Fact, bundled_chips
from accelbench.hardware.share import clock_aware, clock_peaks
from accelbench.ranges import PROVENANCES

SCOPE = (
    "NVIDIA P100",
    "NVIDIA V100",
    "NVIDIA T4",
    "AMD MI250X",
    "AMD MI300X",
    "NVIDIA B200",
    "CPU: AWS Graviton4",
    "CPU: AMD EPYC 9755",
    "CPU: AMD EPYC 9965",
    "CPU: Intel Xeon Platinum 8592+",
    "CPU: Microsoft Azure Cobalt 100",
)
_CLOCKS = ("clock_hz", "base_clock_hz", "max_boost_hz")

# (key, Chip attribute, central value in the file's unit, provenance, source class, a piece of the source)
SOURCED = [
    ("NVIDIA P100", "base_clock_hz", 1328, "datasheet", "review", "xtreview.com"),
    ("NVIDIA P100", "max_boost_hz", 1480, "datasheet", "review", "tech4gamers.com"),
    ("NVIDIA V100", "max_boost_hz", 1533, "estimate", "estimate", "techrival.com"),
    ("NVIDIA T4", "base_clock_hz", 585, "datasheet", "review", "sysrqmts.com/en/gpus/nvidia/tesla/t4"),
    ("NVIDIA T4", "max_boost_hz", 1590, "datasheet", "review", "pcpartdb.com"),
    ("AMD MI250X", "max_boost_hz", 1700, "datasheet", "review", "zexron.com"),
    ("AMD MI300X", "max_boost_hz", 2100, "estimate", "estimate", "rocm.docs.amd.com"),
    ("CPU: AWS Graviton4", "max_boost_hz", 2800, "datasheet", "review", "wikichip.org"),
    ("CPU: AWS Graviton4", "cores", 96, "datasheet", "review", "nextplatform.com"),
    ("CPU: AWS Graviton4", "fp32_flop_per_cycle", 32, "estimate", "estimate", "developer.arm.com"),
    ("CPU: AMD EPYC 9755", "cores", 128, "datasheet", "review", "tomshardware.com"),
    ("CPU: AMD EPYC 9755", "threads", 256, "estimate", "estimate", "svethardware.cz"),
    ("CPU: AMD EPYC 9755", "base_clock_hz", 2700, "estimate", "estimate", "svethardware.cz"),
    ("CPU: AMD EPYC 9755", "max_boost_hz", 4100, "estimate", "estimate", "meftah.com"),
    ("CPU: AMD EPYC 9755", "tdp_w", 500, "estimate", "estimate", "4nownews.com"),
    ("CPU: AMD EPYC 9755", "process_node_nm", 5, "datasheet", "review", "N4P"),
    ("CPU: AMD EPYC 9965", "cores", 192, "datasheet", "review", "tomshardware.com"),
    ("CPU: AMD EPYC 9965", "threads", 384, "datasheet", "review", "384 threads"),
    ("CPU: AMD EPYC 9965", "process_node_nm", 3, "datasheet", "review", "3 nm"),
    ("CPU: AMD EPYC 9965", "tdp_w", 500, "estimate", "estimate", "hothardware.com"),
    ("CPU: Intel Xeon Platinum 8592+", "cores", 64, "datasheet", "review", "nowhyderabad.com"),
    ("CPU: Intel Xeon Platinum 8592+", "threads", 128, "datasheet", "review", "256 threads per dual-socket"),
    ("CPU: Intel Xeon Platinum 8592+", "price_usd", 11600, "datasheet", "review", "$11,600"),
    ("CPU: Intel Xeon Platinum 8592+", "transistors", 61, "datasheet", "review", "61 billion"),
    ("CPU: Intel Xeon Platinum 8592+", "base_clock_hz", 1900, "estimate", "estimate", "techopse.com"),
    ("CPU: Intel Xeon Platinum 8592+", "max_boost_hz", 3900, "estimate", "estimate", "boost up to 3.9 GHz"),
    ("CPU: Intel Xeon Platinum 8592+", "tdp_w", 350, "estimate", "estimate", "techopse.com"),
    ("CPU: Microsoft Azure Cobalt 100", "cores", 128, "datasheet", "review", "servethehome.com"),
    ("CPU: Microsoft Azure Cobalt 100", "process_node_nm", 5, "datasheet", "review", "hardwareluxx.de"),
]

# (key, Chip attributes no source read gave: absent, each named in the row's notes or the TOML comment)
MISSING = [
    ("CPU: AWS Graviton4", ("tdp_w", "transistors", "die_area_mm2", "threads")),
    ("CPU: AMD EPYC 9755", ("price_usd", "transistors", "die_area_mm2", "all_core_boost_hz")),
    ("CPU: AMD EPYC 9965", (*_CLOCKS, "all_core_boost_hz", "price_usd", "transistors", "die_area_mm2")),
    ("CPU: Intel Xeon Platinum 8592+", ("die_area_mm2", "all_core_boost_hz")),
    ("CPU: Microsoft Azure Cobalt 100", (*_CLOCKS, "fp32_flop_per_cycle", "tdp_w", "transistors", "threads")),
]
_IN_NOTES = {
    "tdp_w": "TDP",
    "transistors": "transistor count",
    "die_area_mm2": "die area",
    "threads": "threads per core",
    "price_usd": "price",
    "all_core_boost_hz": "all-core",
    "clock_hz": "clock",
    "base_clock_hz": "clock",
    "max_boost_hz": "clock",
    "fp32_flop_per_cycle": "FLOP per cycle",
}
_SCALE = {attribute: scale for attribute, scale, _ in FIELDS.values()}


def _facts(chip: Chip) -> dict[str, Fact]:
    return {f.name: v for f in dataclasses.fields(chip) if isinstance(v := getattr(chip, f.name), Fact)}


@pytest.mark.parametrize(("key", "name", "value", "provenance", "source_class", "cited"), SOURCED)
def test_sourced_facts_carry_their_value_provenance_class_and_source(
    key: str, name: str, value: float, provenance: str, source_class: str, cited: str
) -> None:
    fact = getattr(bundled_chips().require(key), name)
    assert isinstance(fact, Fact), (key, name)
    assert fact.value.central == pytest.approx(value * _SCALE[name])
    assert (fact.provenance, fact.source_class) == (provenance, source_class)
    assert cited in fact.source or cited in bundled_chips().require(key).source


@pytest.mark.parametrize("key", SCOPE)
def test_no_fact_in_scope_is_recalled_and_each_names_a_source(key: str) -> None:
    """The rows this work sourced: no fact says "recalled"; each cites a page, the shared data or a row."""
    chip = bundled_chips().require(key)
    for name, fact in _facts(chip).items():
        assert "recalled" not in fact.source.lower(), (key, name, fact.source)
        assert any(w in fact.source for w in ("http", "chips.csv", "row source", "row")), (key, name)


@pytest.mark.parametrize(("key", "absent"), MISSING)
def test_facts_no_source_gave_are_absent_and_the_row_says_so(key: str, absent: tuple[str, ...]) -> None:
    chip = bundled_chips().require(key)
    for name in absent:
        assert getattr(chip, name) is None, (key, name)
        if chip.kind == "cpu":
            assert _IN_NOTES[name] in chip.notes, (key, name)


def test_every_fact_of_every_chip_has_a_source_a_provenance_and_a_source_class() -> None:
    for chip in bundled_chips():
        assert chip.source.strip(), chip.key
        for name, fact in _facts(chip).items():
            assert fact.source.strip() and fact.provenance in PROVENANCES, (chip.key, name)
            assert fact.source_class in SOURCE_CLASSES, (chip.key, name)
            assert fact.provenance != "estimate" or fact.source_class == "estimate", (chip.key, name)


@pytest.mark.parametrize(
    ("key", "lanes", "fp32_tflops"),
    [
        ("NVIDIA P100", 3584, None),  # FP32 cores; the peak is chips.csv's
        ("NVIDIA V100", 5120, None),
        ("NVIDIA T4", 2560, None),
        ("AMD MI250X", 14080, None),
        ("AMD MI300X", 304 * 64, 81.7),  # chips.csv's peak is the matrix one; its notes give vector 81.7
    ],
)
def test_gpu_boost_clocks_are_the_clocks_of_the_datasheet_fp32_peaks(
    key: str, lanes: int, fp32_tflops: float | None
) -> None:
    """A clock read in one source and a peak read in another agree: lanes x 2 (FMA) x boost = peak, 1%."""
    chip = bundled_chips().require(key)
    assert chip.max_boost_hz is not None and chip.peak_fp32_flop_per_s is not None
    peak = fp32_tflops * 1e12 if fp32_tflops else chip.peak_fp32_flop_per_s.value.central
    assert lanes * 2 * chip.max_boost_hz.value.central == pytest.approx(peak, rel=0.01)


def test_b200_clock_is_the_range_its_disagreeing_sources_span() -> None:
    """No NVIDIA figure: two GPU pages (1.98, 2.1 GHz) and the clock of chips.csv's 62.1 TFLOPS (1.64)."""
    clock = bundled_chips().require("NVIDIA B200").max_boost_hz
    assert clock is not None and clock.provenance == "estimate" and "disagree" in clock.source
    assert (clock.value.low, clock.value.central, clock.value.high) == pytest.approx((1.64e9, 1.98e9, 2.1e9))
    assert 18944 * 2 * clock.value.low == pytest.approx(62.1e12, rel=0.01)  # the low end is chips.csv's peak


def test_emerald_rapids_few_cores_are_now_judged_at_the_boost_clock() -> None:
    """The leaked sample's 3.9 GHz boost adds a max-boost ceiling: 2 of 64 cores at 3.9 GHz x 64 FLOP."""
    chip = bundled_chips().require("CPU: Intel Xeon Platinum 8592+")
    peaks = {p.name: p.flops_per_s for p in clock_peaks(chip, 2)}
    assert peaks == pytest.approx({"base": 2 * 1.9e9 * 64, "max boost": 2 * 3.9e9 * 64})


def test_a_chip_without_clocks_has_no_clock_aware_peak() -> None:
    """EPYC 9965 and Cobalt 100: no clock was found, so no datasheet peak is made up for them."""
    for key in ("CPU: AMD EPYC 9965", "CPU: Microsoft Azure Cobalt 100"):
        assert not clock_aware(bundled_chips().require(key)), key
