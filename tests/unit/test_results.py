"""Golden-file tests of the stored result document (schema_version 9; versions 1 to 8 upgrade)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from accelbench import registry
from accelbench.cell.tokens_body import TokensBody
from accelbench.endpoint.body import EndpointBody
from accelbench.head import DeviceMemory, Energy, Head
from accelbench.results import RUN_FACTS, SCHEMA_VERSION, Result
from accelbench.stored import STORED_KEYS, from_dict, to_dict

GOLDEN = Path(__file__).parent.parent / "golden" / "result_v9.json"
GOLDEN_V8 = Path(__file__).parent.parent / "golden" / "result_v8.json"
GOLDEN_V7_ENDPOINT = Path(__file__).parent.parent / "golden" / "result_v7_endpoint.json"
GOLDEN_V7 = Path(__file__).parent.parent / "golden" / "result_v7.json"
GOLDEN_V6 = Path(__file__).parent.parent / "golden" / "result_v6.json"
GOLDEN_V5 = Path(__file__).parent.parent / "golden" / "result_v5.json"
GOLDEN_V4 = Path(__file__).parent.parent / "golden" / "result_v4.json"
GOLDEN_V3 = Path(__file__).parent.parent / "golden" / "result_v3.json"
GOLDEN_V2 = Path(__file__).parent.parent / "golden" / "result_v2.json"
GOLDEN_V1 = Path(__file__).parent.parent / "golden" / "result_v1.json"


NOISE_ADDED = ("steal_cores", "threshold", "floor", "samples_shift", "samples_shifted", "reason")
NOISE_ADDED = (*NOISE_ADDED, "other_load_after_cores", "outside_view", "retried")
"""Fields the noise record gained in version 7 (issue 34; ``retried`` later), with defaults for older ones."""


QUALITY_ADDED = ("wrong", "sample_budget", "worst_sample_error")
"""Fields the quality record gained in version 8 (issue 40), null in older records."""


def _without_added_noise(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` without the fields its noise (version 7) and quality records (version 8) gained."""
    noise = {k: v for k, v in (doc.get("noise") or {}).items() if k not in NOISE_ADDED}
    added = {**doc, "noise": noise or doc.get("noise")}
    for name in ("quality", "sanity"):
        if isinstance(doc.get(name), dict):
            added[name] = {k: v for k, v in doc[name].items() if k not in QUALITY_ADDED}
    return added


def _golden() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text())


def _stored_keys() -> list[str]:
    """The document's keys (``stored.STORED_KEYS``), checked against the records: the run facts, ``Head``'s
    fields and every driver's body's (``registry.BODIES``; the ``generation`` key for the records of the
    three drivers that write it), each once."""
    bodies = {name for ref in registry.BODIES.values() for name in registry.load(ref).__dataclass_fields__}
    sections = {"generation" if name in ("decode", "curve", "session_ladder") else name for name in bodies}
    assert set(STORED_KEYS) == set(RUN_FACTS) | set(Head.__dataclass_fields__) | sections
    assert len(STORED_KEYS) == len(set(STORED_KEYS))
    return list(STORED_KEYS)


def test_golden_loads_into_a_fully_populated_result() -> None:
    result = from_dict(_golden())
    assert isinstance(result, Result)
    assert result.schema_version == SCHEMA_VERSION == 9 and result.driver == "tokens"
    assert result.cell.key == "resnet18/standard/v3-width97/onnxruntime/cpu/single-stream"
    assert result.latency is not None and result.latency.median_ci_s == (0.01712, 0.01731)
    assert result.loadgen is not None and result.loadgen.valid and result.qps == 57.8
    figures = result.figures
    assert figures is not None and figures.trials == 3 and figures.lower_is_better
    assert result.headline == ("latency_p90_s", 0.01785) and figures.ci == (0.01741, 0.01829)
    assert result.head.quality is not None and result.head.quality.passed
    assert result.head.sanity is not None and result.head.noise is not None
    assert result.trial_p50_s == (0.0171, 0.0172, 0.0174)
    assert all(getattr(result.head, name) is not None for name in ("compile_s", "peak_rss_bytes"))
    energy = result.head.energy
    assert energy is not None and energy.provenance == "estimated" and energy.formula.startswith("E = W x")
    assert energy.energy_j == sum(energy.domains.values()) == 150.78125
    assert energy.energy_per_query_j == energy.energy_j / energy.samples
    assert energy.power_w == energy.energy_j / energy.window_s
    assert result.variant_info is not None and result.variant_info.drawn_seed == 1234
    assert result.audit is not None
    assert {result.audit.outcome(name) for name in ("output", "repeat", "caching", "precision")} == {"pass"}
    assert result.curve is None and result.session_ladder is None
    generation = result.decode
    assert generation is not None and generation.agreement.identical_share == 1.0
    assert (
        generation.latency_mean_s is not None
        and generation.ttft_percentiles_s["p90"] < generation.latency_mean_s
    )
    assert generation.checks["test06"].passed and generation.energy_per_output_token_j is not None
    assert json.loads(json.dumps(to_dict(result))) == _golden()


def test_v1_document_is_upgraded_with_energy_null() -> None:
    v1 = json.loads(GOLDEN_V1.read_text())
    result = from_dict(v1)
    assert result.schema_version == SCHEMA_VERSION
    assert result.head.energy is None and result.head.device_memory is None
    upgraded = _without_added_noise(json.loads(json.dumps(to_dict(result))))
    assert list(upgraded) == _stored_keys() and upgraded["driver"] == "loadgen"
    new = ("energy", "device_memory", "variant_info", "audit", "training", "figures", "server_search")
    new = (*new, "generation", "driver")
    new = (*new, "schema_version")
    assert {k: v for k, v in upgraded.items() if k not in new} == {
        k: v for k, v in v1.items() if k != "schema_version"
    }


def test_golden_v2_is_the_v1_golden_plus_the_new_fields() -> None:
    v1, v2 = json.loads(GOLDEN_V1.read_text()), json.loads(GOLDEN_V2.read_text())
    assert set(v2) - set(v1) == {"energy", "device_memory"}
    assert all(v2[k] == v1[k] for k in v1 if k != "schema_version")


def test_golden_v6_is_the_v5_golden_plus_the_generation_section() -> None:
    v5, v6 = json.loads(GOLDEN_V5.read_text()), json.loads(GOLDEN_V6.read_text())
    assert set(v6) - set(v5) == {"generation"}
    assert all(v6[k] == v5[k] for k in v5 if k != "schema_version")


def test_golden_v7_is_the_v6_golden_plus_the_noise_guards_evidence() -> None:
    v6, v7 = json.loads(GOLDEN_V6.read_text()), json.loads(GOLDEN_V7.read_text())
    assert set(v7["noise"]) - set(v6["noise"]) == set(NOISE_ADDED)
    assert _without_added_noise(v7) == {**v6, "schema_version": 7}


def test_golden_v8_is_the_v7_golden_plus_the_per_sample_judgement() -> None:
    v7, v8 = json.loads(GOLDEN_V7.read_text()), json.loads(GOLDEN_V8.read_text())
    assert (
        set(v8["quality"]) - set(v7["quality"]) == set(QUALITY_ADDED) == set(v8["sanity"]) - set(v7["sanity"])
    )
    assert all(v8["sanity"][k] is None for k in QUALITY_ADDED)
    quality, sanity = (
        {k: v for k, v in v8[s].items() if k not in QUALITY_ADDED} for s in ("quality", "sanity")
    )
    assert {**v8, "quality": quality, "sanity": sanity} == {**v7, "schema_version": 8}


def test_golden_v9_is_the_v8_golden_plus_the_drivers_name() -> None:
    v8, v9 = json.loads(GOLDEN_V8.read_text()), _golden()
    assert list(v9) == [*(k for k in v8 if k != "schema_version"), "driver", "schema_version"]
    assert v9 == {**v8, "driver": "tokens", "schema_version": 9}


def test_a_v8_document_gets_the_driver_its_generation_section_shows() -> None:
    result = from_dict(json.loads(GOLDEN_V8.read_text()))
    assert result == from_dict(_golden())
    endpoint = from_dict(json.loads(GOLDEN_V7_ENDPOINT.read_text()))
    assert endpoint.driver == "endpoint" and endpoint.curve is not None and endpoint.decode is None
    assert endpoint.curve.curve and to_dict(endpoint)["generation"]["curve"]


TRAINING = {"runs": [], "olympic_mean_s": None, "runs_converged": 0, "target": 0.9, "nproc": 1}
"""A stored ``training`` section of no run."""
NO_SECTION = {name: None for name in ("generation", "latency", "loadgen", "figures", "audit", "variant_info")}
NO_SECTION = {**NO_SECTION, "trial_p50_s": []}
"""The golden document's sections, all taken away."""


@pytest.mark.parametrize(
    ("change", "driver"),
    [
        ({"generation": None}, "loadgen"),
        ({**NO_SECTION, "training": TRAINING}, "train-to-quality"),
        ({k: v for k, v in NO_SECTION.items() if k != "variant_info"}, "loadgen"),  # a variant's record
        (NO_SECTION, ""),
    ],
)
def test_an_older_document_without_a_generation_section_gets_the_driver_its_sections_show(
    change: dict[str, Any], driver: str
) -> None:
    v8 = json.loads(GOLDEN_V8.read_text()) | change
    assert from_dict(v8).driver == driver


@pytest.mark.parametrize("driver", ["loadgen", "train-to-quality", "", "endpoint", "sessions"])
def test_a_generation_section_is_read_as_the_record_of_the_driver_that_wrote_it(driver: str) -> None:
    doc = _golden() | {"driver": driver}  # a tokens cell's sections under another driver's name
    with pytest.raises((KeyError, TypeError, ValueError, AttributeError)):
        from_dict(doc)
    if driver == "loadgen":  # its body reads every section but the decode one, and drops nothing
        with pytest.raises(ValueError, match="sections its body does not hold: generation"):
            from_dict(doc)
    if driver == "":
        with pytest.raises(ValueError, match="in a result of no driver"):
            from_dict(doc)


def test_a_result_holds_its_drivers_body_as_it_is() -> None:
    golden = from_dict(_golden())
    endpoint = from_dict(json.loads(GOLDEN_V7_ENDPOINT.read_text()))
    assert isinstance(golden.body, TokensBody) and isinstance(endpoint.body, EndpointBody)
    assert golden.decode is golden.body.decode and golden.curve is None and endpoint.decode is None
    assert endpoint.curve is endpoint.body.curve and endpoint.audit is endpoint.body.audit
    bare = dataclasses.replace(golden, body=None)
    assert bare.latency is None and bare.trial_p50_s == () and bare.qps is None
    assert from_dict(to_dict(bare)) == bare and to_dict(bare)["trial_p50_s"] == []
    with pytest.raises(ValueError, match="holds a TokensBody and names no driver"):
        to_dict(dataclasses.replace(golden, driver=""))  # it could not be read back: never written


def test_a_v7_document_keeps_its_status_and_its_quality_has_no_per_sample_judgement() -> None:
    result = from_dict(json.loads(GOLDEN_V7.read_text()))
    assert result.head.status == "ok" and result.schema_version == SCHEMA_VERSION
    assert result.head.quality is not None and result.head.quality.value == 1.0
    assert (
        result.head.quality.wrong,
        result.head.quality.sample_budget,
        result.head.quality.worst_sample_error,
    ) == (
        None,
        None,
        None,
    )


def test_a_v6_document_keeps_its_status_and_its_noise_record_gets_the_old_limit() -> None:
    v6 = json.loads(GOLDEN_V6.read_text())
    result = from_dict(v6)
    assert result.head.status == "ok" and result.schema_version == SCHEMA_VERSION
    assert result.head.noise is not None and result.head.noise.drift == 0.019
    assert (result.head.noise.threshold, result.head.noise.floor, result.head.noise.reason) == (
        0.05,
        None,
        "",
    )
    assert (
        result.head.noise.steal_cores,
        result.head.noise.samples_shift,
        result.head.noise.samples_shifted,
    ) == (
        0.0,
        None,
        False,
    )


def test_a_v5_document_is_upgraded_with_generation_null() -> None:
    result = from_dict(json.loads(GOLDEN_V5.read_text()))
    assert result.decode is None and result.head.status == "ok" and result.schema_version == SCHEMA_VERSION


def test_golden_v5_is_the_v4_golden_plus_the_figures() -> None:
    v4, v5 = json.loads(GOLDEN_V4.read_text()), json.loads(GOLDEN_V5.read_text())
    assert set(v5) - set(v4) == {"figures", "server_search"}
    assert all(v5[k] == v4[k] for k in v4 if k != "schema_version")


def test_a_v4_document_keeps_its_status_and_falls_back_to_loadgen_qps() -> None:
    v4 = json.loads(GOLDEN_V4.read_text()) | {"status": "ok", "reason": ""}
    v4["loadgen"] = v4["loadgen"] | {"valid": False}  # a v4 status already followed the audits
    result = from_dict(v4)
    assert result.head.status == "ok" and result.figures is None and result.server_search is None
    assert result.headline == ("qps", 57.8) and result.schema_version == SCHEMA_VERSION


def test_golden_v4_is_the_v3_golden_with_verdicts_in_the_audit_section() -> None:
    v3, v4 = json.loads(GOLDEN_V3.read_text()), json.loads(GOLDEN_V4.read_text())
    assert set(v4) == set(v3) and v4["schema_version"] == 4
    assert all(v4[k] == v3[k] for k in v3 if k not in ("schema_version", "audit"))
    assert all(
        entry["verdict"] in ("pass", "fail", "inconclusive") and entry["reason"]
        for entry in v4["audit"].values()
        if isinstance(entry, dict)
    )


@pytest.mark.parametrize(
    ("change", "status", "words"),
    [
        ({}, "ok", ""),
        ({"audit": {"caching": {"flagged": True}}}, "disqualified", "caching audit flagged"),
        (
            {"loadgen": {"valid": False, "invalid_reasons": ["min duration not met"]}},
            "invalid",
            "min duration",
        ),
        ({"noise": {"unstable": True, "drift": 0.2}}, "unstable", "20%"),
    ],
)
def test_a_v3_document_gets_its_status_from_what_it_stored(change: dict, status: str, words: str) -> None:
    v3 = json.loads(GOLDEN_V3.read_text())
    for key, value in change.items():
        v3[key] = {**(v3[key] or {}), **value}
    result = from_dict(v3)
    assert result.head.status == status and words in result.head.reason
    assert result.schema_version == SCHEMA_VERSION


def test_golden_v3_is_the_v2_golden_plus_the_sections() -> None:
    v2, v3 = json.loads(GOLDEN_V2.read_text()), json.loads(GOLDEN_V3.read_text())
    assert set(v3) - set(v2) == {"variant_info", "audit", "training"}
    assert all(v3[k] == v2[k] for k in v2 if k != "schema_version")


def test_v2_document_is_upgraded_with_sections_null() -> None:
    result = from_dict(json.loads(GOLDEN_V2.read_text()))
    assert result.schema_version == SCHEMA_VERSION
    assert (result.variant_info, result.audit, result.training) == (None, None, None)
    assert result.head.energy is not None


def test_device_memory_and_polled_energy_round_trip() -> None:
    energy = Energy(
        energy_j=12.5,
        power_w=250.0,
        energy_per_query_j=0.125,
        samples_per_j=8.0,
        window_s=0.05,
        samples=100,
        provenance="polled",
        meter="nvml",
        formula="power sampled every 0.1 s and integrated",
        domains={"gpu0": 12.5},
        idle_power_w=60.0,
        idle_subtracted=False,
    )
    memory = DeviceMemory(peak_bytes=3 * 2**30, source="torch.cuda.max_memory_allocated")
    doc = _golden() | {"energy": dataclasses.asdict(energy), "device_memory": dataclasses.asdict(memory)}
    result = from_dict(json.loads(json.dumps(doc)))
    assert result.head.energy == energy and result.head.device_memory == memory
    assert json.loads(json.dumps(to_dict(result))) == doc


@pytest.mark.parametrize(("field", "value"), [("provenance", "guessed"), ("formula", "")])
def test_energy_without_a_label_is_refused(field: str, value: str) -> None:
    doc = _golden()
    doc["energy"] = doc["energy"] | {field: value}
    with pytest.raises(ValueError):
        from_dict(doc)


def test_to_dict_of_golden_equals_golden_exactly() -> None:
    golden = _golden()
    assert json.loads(json.dumps(to_dict(from_dict(golden)))) == golden


def test_golden_keys_are_exactly_the_result_fields() -> None:
    assert list(_golden()) == _stored_keys()


def test_unknown_schema_version_raises() -> None:
    doc = _golden() | {"schema_version": 999}
    with pytest.raises(ValueError, match="schema_version"):
        from_dict(doc)


def test_missing_schema_version_raises() -> None:
    doc = _golden()
    del doc["schema_version"]
    with pytest.raises(ValueError, match="schema_version"):
        from_dict(doc)


def test_invalid_status_raises() -> None:
    with pytest.raises(ValueError, match="status"):
        from_dict(_golden() | {"status": "fast"})
