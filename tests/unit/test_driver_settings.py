"""Each driver's settings record (``accelbench.settings``): built once in the parent from the run's
``RunConfig`` with its defaults resolved, carried in ``CellSpec.settings`` as JSON tagged by the driver's
name, and rebuilt as the same type in the cell process; an old flat ``spec.json`` still reads."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from accelbench import registry, settings
from accelbench.cell import pipeline
from accelbench.cellspec import CellSpec, PlannedCell, Refs, upgrade
from accelbench.config import RunConfig, default_knobs
from accelbench.endpoint.settings import EndpointSettings
from accelbench.errors import UserError
from accelbench.head import Head
from accelbench.results import Cell, Result
from accelbench.served_options import ServedOptions
from accelbench.sessions.settings import DEFAULT_OUTPUT_TOKENS, DEFAULT_TURNS, SessionSettings
from accelbench.training.settings import TrainingSettings

CONFIG = RunConfig(
    "knobs",
    ("resnet50",),
    ("torch-eager",),
    ("offline",),
    "tiny",
    "quick",
    input_seed=99,
    served=ServedOptions(url="http://127.0.0.1:9", api_key_env="MY_KEY", cluster="auto"),
    knobs=default_knobs(
        {"runs": 3, "nproc": 2, "batch": 4, "batch_sweep": (1, 8)}
        | {
            "concurrency": (1, 4),
            "endpoint_requests": 12,
            "endpoint_api": "completions",
            "arrivals": "poisson",
        }
        | {"sessions": (1, 2), "session_turns": 3, "output_tokens": 16}
    ),
)


def _spec(tmp_path: Path, driver: str, config: RunConfig = CONFIG) -> CellSpec:
    planned = PlannedCell(
        Cell("resnet50", "torch-eager", "offline", "cpu", "tiny"),
        registry.table("workload")["resnet50"],
        registry.table("stack")["torch-eager"],
        registry.DRIVERS[driver],
    )
    return pipeline.cell_spec("20261205-170000-abcd", config, planned, tmp_path)


def test_every_driver_has_a_settings_record_and_no_other() -> None:
    assert set(registry.SETTINGS) == set(registry.DRIVERS)
    for driver in registry.DRIVERS:
        assert settings.record_type(driver).driver == driver


def test_every_driver_has_a_body_record_the_parent_reads_its_outcome_with() -> None:
    assert set(registry.BODIES) == set(registry.DRIVERS)
    for driver, reference in registry.BODIES.items():
        body = registry.load(reference)
        assert callable(body.from_dict) and dataclasses.is_dataclass(body), driver
        # the parent stores the body as it is (pipeline.result_of); readers ask Result for its sections
        names = {f.name for f in dataclasses.fields(body)}
        read = {name for name in names if isinstance(getattr(Result, name, None), property)}
        assert read == names, (driver, names - read)
        assert not names & set(Head.__dataclass_fields__), driver


def test_no_field_is_declared_in_both_head_and_result() -> None:
    """``Result`` holds the head (``Result.head``); readers ask ``result.head.status``: no field or
    property of ``Result`` repeats a head field."""
    head = {f.name for f in dataclasses.fields(Head)}
    assert not head & {f.name for f in dataclasses.fields(Result)}
    assert "head" in Result.__dataclass_fields__ and not [name for name in head if hasattr(Result, name)]


@pytest.mark.parametrize("driver", sorted(registry.DRIVERS))
def test_each_drivers_settings_cross_the_process_boundary_as_their_own_type(
    tmp_path: Path, driver: str
) -> None:
    spec = _spec(tmp_path, driver)
    assert type(spec.settings) is settings.record_type(driver)
    document = json.loads(json.dumps(spec.to_dict()))
    assert document["settings"]["driver"] == driver
    assert CellSpec.from_dict(document) == spec
    public = json.loads(json.dumps(spec.public_dict()))
    assert "input_seed" not in public and str(spec.input_seed) not in json.dumps(public)
    assert CellSpec.from_dict(public, input_seed=spec.input_seed) == spec


def test_the_parent_resolves_each_drivers_knobs_and_defaults(tmp_path: Path) -> None:
    endpoint = _spec(tmp_path, "endpoint").settings
    assert endpoint == EndpointSettings(
        ladder=(1, 4),
        requests=12,
        max_tokens=16,
        api="completions",
        api_key_env="MY_KEY",
        arrivals="poisson",
        serve_url="http://127.0.0.1:9",
    )
    assert endpoint.requests_at(4) == 12 and endpoint.requests_at(20) == 20
    plain = RunConfig("plain", ("resnet50",), ("torch-eager",), ("offline",), "tiny", "quick", input_seed=1)
    assert _spec(tmp_path, "endpoint", plain).settings == EndpointSettings(
        ladder=(), requests=0, max_tokens=128, api="chat", api_key_env="ACCELBENCH_API_KEY"
    )
    assert _spec(tmp_path, "sessions", plain).settings == SessionSettings(
        ladder=(), turns=DEFAULT_TURNS, max_tokens=DEFAULT_OUTPUT_TOKENS, api_key_env="ACCELBENCH_API_KEY"
    )
    assert DEFAULT_TURNS > 0 and DEFAULT_OUTPUT_TOKENS > 0
    sessions = _spec(tmp_path, "sessions").settings
    assert isinstance(sessions, SessionSettings) and sessions.shape.turns == 3 and sessions.ladder == (1, 2)
    assert _spec(tmp_path, "train-to-quality").settings == TrainingSettings(runs=3, nproc=2)
    assert _spec(tmp_path, "tokens").settings.to_dict() == {}
    loadgen = _spec(tmp_path, "loadgen").settings.to_dict()
    assert loadgen == {
        "batch": 4,
        "batch_sweep": (1, 8),
        "serve_url": "http://127.0.0.1:9",
        "serve_cluster": "auto",
    }


def test_a_driver_given_another_drivers_settings_refuses_to_read_them(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "loadgen")
    with pytest.raises(TypeError, match="loadgen's, not EndpointSettings"):
        settings.expect(spec.settings, EndpointSettings)


def test_an_untagged_or_unknown_settings_document_is_a_one_line_error() -> None:
    with pytest.raises(UserError, match="name no driver"):
        settings.from_dict({"runs": 2})
    with pytest.raises(UserError, match="unknown driver 'bogus'"):
        settings.from_dict({"driver": "bogus"})


FLAT_ENDPOINT_SPEC = {
    "run_id": "20261201-120000-beef",
    "cell": {
        "workload": "tiny-llama",
        "stack": "llm@url",
        "scenario": "single-stream",
        "device": "cpu",
        "size": "standard",
        "variant": "canonical",
    },
    "workload_ref": "accelbench.generation.workload:TinyLlama",
    "stack_ref": "accelbench.endpoint.stack:UrlEndpoint",
    "driver_ref": "accelbench.endpoint.cell:measure",
    "rules": "quick",
    "threads": 2,
    "seed": 0,
    "samples": 64,
    "cell_dir": "/s/runs/r/cells/c",
    "run_dir": "/s/runs/r",
    "cache_dir": "/s/runs/r/cache",
    "result_path": "/s/runs/r/cells/c/outcome.json",
    "runs": 5,
    "nproc": 1,
    "batch": None,
    "batch_sweep": [],
    "serve_url": "http://127.0.0.1:8000",
    "serve_cluster": None,
    "concurrency": [1, 2],
    "endpoint_requests": 0,
    "output_tokens": 0,
    "api_key_env": "",
    "endpoint_api": "",
    "arrivals": "",
    "sessions": [],
    "session_turns": 0,
    "noise_floor": None,
    "measured_fp32_flops_per_s": None,
    "store_cache_dir": "/s/cache",
}
"""A ``spec.json`` as runs before the settings record wrote it (every driver knob a flat field)."""


def test_an_old_flat_spec_json_reads_with_its_drivers_settings() -> None:
    upgraded = upgrade(FLAT_ENDPOINT_SPEC)
    assert upgraded["settings"] == {
        "driver": "endpoint",
        "ladder": (1, 2),
        "requests": 0,
        "max_tokens": 128,
        "api": "chat",
        "api_key_env": "ACCELBENCH_API_KEY",
        "arrivals": "",
        "serve_url": "http://127.0.0.1:8000",
        "point_max_s": 0.0,  # an old spec predates the point cap: its first requests only
    }
    assert "concurrency" not in upgraded and upgraded["cell"] == FLAT_ENDPOINT_SPEC["cell"]
    spec = CellSpec.from_dict(FLAT_ENDPOINT_SPEC, input_seed=5)
    assert spec.settings == EndpointSettings(ladder=(1, 2), serve_url="http://127.0.0.1:8000")
    assert (
        spec.input_seed == 5 and spec.cell.stack == "llm@url" and spec.folders.store_cache_dir == "/s/cache"
    )
    assert upgrade(spec.public_dict()) == spec.public_dict()  # a current document is left as it is
    assert spec.refs == Refs(
        "accelbench.generation.workload:TinyLlama",
        "accelbench.endpoint.stack:UrlEndpoint",
        "accelbench.endpoint.cell:measure",
    )
    assert spec.folders.model_cache_dir == "/s/cache" and spec.folders.cell_dir == "/s/runs/r/cells/c"


@pytest.mark.parametrize("driver", sorted(registry.DRIVERS))
def test_a_spec_json_with_settings_and_flat_refs_and_folders_reads(tmp_path: Path, driver: str) -> None:
    """The form runs wrote between the settings record and the refs and folders records."""
    spec = _spec(tmp_path, driver)
    document = json.loads(json.dumps(spec.public_dict()))
    refs, folders = document.pop("refs"), document.pop("folders")
    flat = {**document, **{f"{name}_ref": ref for name, ref in refs.items()}, **folders}
    assert "refs" not in flat and flat["driver_ref"] == spec.refs.driver and "cell_dir" in flat
    assert CellSpec.from_dict(flat, input_seed=spec.input_seed) == spec


def test_an_old_flat_spec_without_later_knobs_or_a_driver_reads_as_loadgen() -> None:
    older = {k: v for k, v in FLAT_ENDPOINT_SPEC.items() if k not in ("driver_ref", "arrivals", "sessions")}
    older = {**older, "batch": 2, "batch_sweep": [1, 2]}
    spec = CellSpec.from_dict(older, input_seed=1)
    assert spec.settings.to_dict() == {
        "batch": 2,
        "batch_sweep": (1, 2),
        "serve_url": "http://127.0.0.1:8000",
        "serve_cluster": None,
    }


def test_a_flat_spec_naming_no_known_driver_is_a_one_line_error() -> None:
    with pytest.raises(UserError, match="no driver is 'mod:gone'"):
        upgrade({**FLAT_ENDPOINT_SPEC, "driver_ref": "mod:gone"})
