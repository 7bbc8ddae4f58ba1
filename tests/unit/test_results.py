"""Golden-file tests of the stored result document (``accelbench.results``, schema_version 1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from accelbench.results import SCHEMA_VERSION, Result, from_dict, to_dict

GOLDEN = Path(__file__).parent.parent / "golden" / "result_v1.json"


def _golden() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text())


def test_golden_loads_into_a_fully_populated_result() -> None:
    result = from_dict(_golden())
    assert isinstance(result, Result)
    assert result.schema_version == SCHEMA_VERSION == 1
    assert result.cell.key == "resnet18/standard/v3-width97/onnxruntime/cpu/single-stream"
    assert result.latency is not None and result.latency.median_ci_s == (0.01712, 0.01731)
    assert result.loadgen is not None and result.loadgen.valid and result.qps == 57.8
    assert result.quality is not None and result.quality.passed
    assert result.sanity is not None and result.noise is not None
    assert result.trial_p50_s == (0.0171, 0.0172, 0.0174)
    assert all(getattr(result, name) is not None for name in ("compile_s", "peak_rss_bytes"))


def test_to_dict_of_golden_equals_golden_exactly() -> None:
    golden = _golden()
    assert json.loads(json.dumps(to_dict(from_dict(golden)))) == golden


def test_golden_keys_are_exactly_the_result_fields() -> None:
    assert list(_golden()) == list(Result.__dataclass_fields__)


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
