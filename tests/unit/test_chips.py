"""Chip facts: the bundled table, ranges where sources disagree, user chip files, machine matching."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelbench.errors import UserError
from accelbench.hardware.chips import bundled_chips, load_chips
from accelbench.hardware.cpuid import microarchitecture
from accelbench.hardware.detect import Gpu, Machine, is_model_hidden
from accelbench.hardware.match import match_device, match_gpu, match_machine
from accelbench.ranges import PROVENANCES


def machine(
    model: str = "AMD EPYC", vendor: str = "AuthenticAMD", family: int = 0x1A, number: int = 0x02,
    cores: int = 2, gpus: tuple[Gpu, ...] = (),
) -> Machine:  # fmt: skip
    """A detected machine like this project's VM (2 vCPUs, SKU hidden) unless told otherwise."""
    return Machine(
        cpu_model=model, cpu_vendor=vendor, cpu_family=family, cpu_model_number=number, cpu_stepping=1,
        microarchitecture=microarchitecture(vendor, family, number), model_hidden=is_model_hidden(model),
        logical_cores=cores, physical_cores=cores, sockets=1, isa_flags=(), caches=(), mem_bytes=24 * 2**30,
        os_name="Linux", kernel="6.1", python_version="3.11.9", gpus=gpus,
    )  # fmt: skip


# ------------------------------------------------------------------------------------------ bundled


def test_every_bundled_chip_has_a_source_and_every_fact_a_known_provenance() -> None:
    table = bundled_chips()
    assert len(table) == 66  # 29 rows of chips.csv + 37 CPUs from chip_facts.toml
    for chip in table:
        assert chip.source.strip(), chip.key
        for name in ("process_node_nm", "transistors", "die_area_mm2", "tdp_w", "clock_hz", "price_usd"):
            fact = getattr(chip, name)
            if fact is not None:
                assert fact.provenance in PROVENANCES and fact.source.strip(), (chip.key, name)
                assert 0 < fact.value.low <= fact.value.central <= fact.value.high


def test_datasheet_figures_are_stored_in_si_units() -> None:
    v100 = bundled_chips().require("NVIDIA V100")
    assert v100.transistors is not None and v100.transistors.value.central == pytest.approx(21.1e9)
    assert v100.transistors.value.is_point and v100.transistors.provenance == "datasheet"
    assert v100.die_area_mm2 is not None and v100.die_area_mm2.value.central == 815
    assert v100.peak_fp16_flop_per_s is not None and v100.peak_fp16_flop_per_s.value.central == 125e12
    assert v100.process_node_nm is not None and v100.process_node_nm.value.central == 12
    assert v100.clock_hz is not None and v100.clock_hz.provenance == "estimate"  # not in the shared data


def test_tpu_v4_keeps_both_disputed_transistor_counts_and_tdps() -> None:
    tpu = bundled_chips().require("google tpu v4")  # keys compare case-insensitively
    assert tpu.transistors is not None and tpu.tdp_w is not None and tpu.die_area_mm2 is not None
    transistors = tpu.transistors.value
    assert (transistors.low, transistors.central, transistors.high) == pytest.approx((22e9, 22e9, 41e9))
    assert tpu.transistors.provenance == "paper" and "2304.01433" in tpu.transistors.source
    assert (tpu.tdp_w.value.low, tpu.tdp_w.value.central, tpu.tdp_w.value.high) == (192, 192, 340)
    assert tpu.die_area_mm2.value.high == 600 and tpu.die_area_mm2.value.low == 593


def test_mi250x_tdp_is_a_range_and_h100_node_is_the_5nm_class_estimate() -> None:
    table = bundled_chips()
    mi250x = table.require("AMD MI250X")
    assert mi250x.tdp_w is not None and (mi250x.tdp_w.value.low, mi250x.tdp_w.value.high) == (500, 560)
    h100 = table.require("NVIDIA H100 SXM")
    assert h100.process_node_nm is not None and h100.process_node_nm.value.central == 5
    assert h100.process_node_nm.provenance == "estimate"


def test_zen5_rows_are_marked_estimates_and_genoa_cores_come_from_the_shared_data() -> None:
    table = bundled_chips()
    turin = table.require("CPU: AMD EPYC 9755")
    assert turin.microarchitecture == "Zen 5 (Turin)" and turin.kind == "cpu"
    assert turin.cores is not None and turin.cores.value.central == 128
    assert turin.cores.provenance == "datasheet" and turin.cores.source_class == "review"  # AMD's launch
    assert all(getattr(turin, n).provenance == "estimate" for n in ("threads", "tdp_w", "clock_hz"))  # leaks
    assert turin.transistors is None and turin.price_usd is None  # no source read: absent, not recalled
    genoa = table.require("CPU: AMD EPYC 9654")
    assert (
        genoa.cores is not None and genoa.cores.provenance == "datasheet" and genoa.cores.value.central == 96
    )
    assert genoa.transistors is not None and genoa.transistors.value.low == pytest.approx(78.8e9)


def test_unknown_chip_names_close_keys() -> None:
    with pytest.raises(UserError, match="did you mean 'NVIDIA V100'"):
        bundled_chips().require("NVIDIA V10")


# ---------------------------------------------------------------------------------------- user file

GOOD = """
[[chip]]
key = "Acme X1"
vendor = "Acme"
name = "X1"
kind = "accelerator"
year = 2025
source = "https://acme.example/x1-datasheet"
process_node_nm = 7
transistors_billion = { low = 40, high = 50, provenance = "estimate", source = "die photo" }
die_area_mm2 = 600
tdp_w = 300
clock_mhz = 1500

[[amend]]
key = "NVIDIA T4"
tdp_w = { low = 60, high = 70, central = 70, provenance = "datasheet", source = "low-power mode" }
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "chips.toml"
    path.write_text(text)
    return path


def test_user_file_adds_a_chip_with_a_range_and_amends_another(tmp_path: Path) -> None:
    table = load_chips(write(tmp_path, GOOD))
    x1 = table.require("Acme X1")
    assert (
        x1.transistors is not None and x1.transistors.value.low == 40e9 and x1.transistors.value.high == 50e9
    )
    assert x1.transistors.value.central == pytest.approx((40e9 * 50e9) ** 0.5)  # geometric mean by default
    assert x1.clock_hz is not None and x1.clock_hz.value.central == 1.5e9
    assert x1.tdp_w is not None and x1.tdp_w.provenance == "datasheet" and "acme.example" in x1.tdp_w.source
    t4 = table.require("NVIDIA T4")
    assert t4.tdp_w is not None and (t4.tdp_w.value.low, t4.tdp_w.value.central) == (60, 70)
    assert bundled_chips().require("NVIDIA T4").tdp_w.value.low == 70  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[chip]\nkey = 1", "invalid TOML"),
        (GOOD.replace("tdp_w = 300", "tdp_watts = 300"), "field 'tdp_watts': unknown field"),
        (GOOD.replace("low = 40, high = 50", "low = 50, high = 40"),
         "field 'transistors_billion': low 50 is above"),
        (GOOD.replace("central = 70", "central = 80"), "field 'tdp_w': central 80 is outside"),
        (GOOD.replace('provenance = "estimate"', 'provenance = "rumour"'), "provenance 'rumour'"),
        (GOOD.replace("tdp_w = 300", 'tdp_w = "300 W"'), "field 'tdp_w': expected a number or a table"),
        (GOOD.replace("tdp_w = 300", "tdp_w = -300"), "field 'tdp_w': values must be positive"),
        (GOOD.replace('key = "Acme X1"', 'key = "NVIDIA V100"'), "'NVIDIA V100' already exists"),
        (GOOD.replace('key = "NVIDIA T4"', 'key = "NVIDIA T5"'), "amend\\]\\] of unknown chip 'NVIDIA T5'"),
        (GOOD.replace('source = "https://acme.example/x1-datasheet"', ""),
         "field 'source': a non-empty string"),
        (GOOD.replace("die_area_mm2 = 600", "die_area_mm2 = 60"),
         "'transistors_billion' and 'die_area_mm2' contradict"),
        (GOOD.replace("kind = \"accelerator\"", "kind = \"fpga\""), "field 'kind'"),
        (GOOD + GOOD.split("[[amend]]")[0], "'Acme X1' is defined twice"),
        ("schema_version = 2", "schema_version 2"),
        (GOOD.replace("clock_mhz = 1500", "cores = 2.5"), "field 'cores': expected a whole number"),
    ],
)  # fmt: skip
def test_bad_user_file_is_a_one_line_error_naming_the_field(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(UserError, match=message) as caught:
        load_chips(path)
    assert str(path) in str(caught.value)
    assert "\n" not in " ".join(str(caught.value).split())


def test_missing_user_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read chips file"):
        load_chips(tmp_path / "absent.toml")


# ------------------------------------------------------------------------------------------ matching


def test_hidden_zen5_model_string_falls_back_to_the_microarchitecture_guess() -> None:
    found = match_machine(machine())  # this VM: "AMD EPYC", family 0x1A model 0x02
    assert found.chip is not None and found.chip.key == "CPU: AMD EPYC 9755"
    assert found.basis == "microarchitecture guess"
    assert found.count == pytest.approx(2 / 128)
    assert "does not name the SKU" in found.notes[0] and "Zen 5 (Turin)" in found.notes[0]


def test_hidden_zen4_model_string_guesses_genoa_with_its_core_share() -> None:
    found = match_machine(machine(family=0x19, number=0x11))
    assert found.chip is not None and found.chip.key == "CPU: AMD EPYC 9654"
    assert found.basis == "microarchitecture guess" and found.count == pytest.approx(2 / 96)


@pytest.mark.parametrize(
    ("model", "vendor", "family", "number", "key"),
    [
        ("AMD EPYC 9654 96-Core Processor", "AuthenticAMD", 0x19, 0x11, "CPU: AMD EPYC 9654"),
        ("AMD EPYC 7763 64-Core Processor", "AuthenticAMD", 0x19, 0x01, "CPU: AMD EPYC 7763"),
        ("Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz", "GenuineIntel", 6, 0x6A,
         "CPU: Intel Xeon Platinum 8380"),
    ],
)  # fmt: skip
def test_named_cpu_models_match_by_sku(model: str, vendor: str, family: int, number: int, key: str) -> None:
    found = match_machine(machine(model, vendor, family, number, cores=8))
    assert found.chip is not None and found.chip.key == key and found.basis == "model string"


def test_unknown_cpu_is_unmatched_and_says_why() -> None:
    found = match_machine(machine("AMD EPYC", family=0x17, number=0x71))  # Zen 2 client: no row
    assert found.chip is None and found.basis == "unmatched" and "Zen 2 (client)" in found.notes[0]
    assert found.count == 0.0 and "0 chips" in found.count_basis


@pytest.mark.parametrize(
    ("name", "mem_gib", "key"),
    [
        ("NVIDIA H200", 140, "NVIDIA H200 SXM"),
        ("NVIDIA H100 80GB HBM3", 80, "NVIDIA H100 SXM"),
        ("NVIDIA A100-SXM4-80GB", 80, "NVIDIA A100 SXM 80GB"),
        ("NVIDIA A100-SXM4-40GB", 40, "NVIDIA A100 SXM 40GB"),
        ("Tesla V100-SXM2-16GB", 16, "NVIDIA V100"),
        ("NVIDIA GB200", 186, "NVIDIA GB200"),
    ],
)
def test_gpu_names_match_chips(name: str, mem_gib: int, key: str) -> None:
    found = match_gpu(Gpu(0, name, mem_gib * 2**30, "560.35"))
    assert found.chip is not None and found.chip.key == key and found.count == 1.0


def test_unknown_gpu_and_missing_device_are_unmatched() -> None:
    assert match_gpu(Gpu(0, "NVIDIA GeForce RTX 4090", 24 * 2**30, "")).chip is None
    found = match_device(machine(gpus=(Gpu(0, "NVIDIA H200", 140 * 2**30, ""),)), "cuda:1")
    assert found.chip is None and "cuda:1" in found.notes[0]
    on_gpu = match_device(machine(gpus=(Gpu(0, "NVIDIA H200", 140 * 2**30, ""),)), "cuda:0")
    assert on_gpu.chip is not None and on_gpu.chip.key == "NVIDIA H200 SXM"


def test_a_chips_plain_numbers_take_the_class_of_its_source(tmp_path: Path) -> None:
    """Issue 42 item 5: a row read from a review page is not a vendor datasheet. The Xeon 6980P's cores
    come from Tom's Hardware (review), the M1's transistors from Apple's newsroom (vendor announcement);
    a user's row without ``class`` stays vendor datasheet, and ``class = "estimate"`` is refused."""
    chips = bundled_chips()
    granite = chips.require("CPU: Intel Xeon 6980P")
    assert granite.cores is not None and granite.cores.source_class == "review"
    m1 = chips.require("CPU: Apple M1")
    assert m1.transistors is not None and m1.transistors.source_class == "vendor announcement"
    path = tmp_path / "chips.toml"
    path.write_text('[[chip]]\nkey = "X1"\nvendor = "V"\nname = "X1"\nsource = "s"\ntdp_w = 100\n')
    fact = load_chips(path).require("X1").tdp_w
    assert fact is not None and fact.source_class == "vendor datasheet"
    path.write_text('[[chip]]\nkey = "X1"\nvendor = "V"\nname = "X1"\nsource = "s"\nclass = "estimate"\n')
    with pytest.raises(UserError, match="field 'class'"):
        load_chips(path)
