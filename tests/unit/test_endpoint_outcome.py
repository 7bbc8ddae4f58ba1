"""An endpoint cell's typed outcome (``accelbench.endpoint.outcome.EndpointBody``, ``accelbench.curve``):
a result stored by the code before it (main at 4ee2e20, the golden file) loads typed, writes back the same
document (with the driver's name, schema 9), and its readers (report, bundle) see its curve at
``generation.curve``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from accelbench.bundle.fields import served_curve
from accelbench.bundle.fields import stored as bundle_claims
from accelbench.curve import CurvePoint
from accelbench.endpoint.outcome import EndpointBody
from accelbench.errors import UserError
from accelbench.head import Head
from accelbench.outcome import Outcome
from accelbench.report.endpoint import curve_table
from accelbench.report.generation import generation_table
from accelbench.results import SCHEMA_VERSION
from accelbench.stored import from_dict, to_dict

GOLDEN = Path(__file__).parent.parent / "golden"
ENDPOINT = GOLDEN / "result_v7_endpoint.json"
"""``accelbench run --stacks llm@url`` (tiny-llama on transformers serve CB, concurrency 1,2, 2 requests
per point, 8 tokens) by main's code at 4ee2e20, before the endpoint driver returned a typed outcome."""
RUN_FACTS = ("run_id", "cell", "machine_fingerprint", "started_at", "wall_s", "stderr_tail", "schema_version")
UPGRADED = {"driver": "endpoint", "schema_version": SCHEMA_VERSION}
"""What the upgrade adds to the stored document: the driver's name its curve shows, the schema."""


def _stored() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(ENDPOINT.read_text())
    return document


def test_a_stored_endpoint_result_loads_typed_and_writes_the_same_document_back() -> None:
    stored = _stored()
    result = from_dict(stored)
    section = result.curve
    assert section is not None and result.driver == "endpoint" and result.decode is None
    points = stored["generation"]["curve"]
    assert [p.concurrency for p in section.curve] == [p["concurrency"] for p in points] == [1, 2]
    assert [p.output_tokens_per_s for p in section.curve] == [p["output_tokens_per_s"] for p in points]
    assert section.max_output_tokens_per_s == max(p["output_tokens_per_s"] for p in points) > 0
    assert (section.endpoint, section.model, section.max_tokens) == ("llm@url", "tiny-llama", 8)
    assert section.accuracy is not None and section.accuracy.bar == 0.6
    assert section.accuracy.concurrencies == (1, 2) and len(section.accuracy.shares) == 4
    assert json.loads(json.dumps(to_dict(result))) == {**stored, **UPGRADED}


def test_a_section_stored_before_the_accuracy_check_loads_without_it() -> None:
    stored = _stored()
    del stored["generation"]["accuracy"]
    result = from_dict(stored)
    assert result.curve is not None and result.curve.accuracy is None
    assert json.loads(json.dumps(to_dict(result))) == {**stored, **UPGRADED}


def test_the_two_kinds_of_generation_section_are_read_by_the_drivers_name() -> None:
    decode = from_dict(json.loads((GOLDEN / "result_v7.json").read_text()))
    assert (decode.driver, decode.curve) == ("tokens", None) and decode.decode is not None
    endpoint = from_dict({**_stored(), **UPGRADED})
    assert endpoint.curve is not None and endpoint.decode is None
    broken = {k: v for k, v in _stored()["generation"].items() if k != "endpoint"}
    with pytest.raises(TypeError, match="endpoint"):
        from_dict({**_stored(), **UPGRADED, "generation": broken})


def test_the_endpoint_outcome_is_the_stored_document_without_the_run_facts() -> None:
    stored = _stored()
    result = from_dict(stored)
    assert result.audit is not None and result.curve is not None
    body = EndpointBody(curve=result.curve, audit=result.audit)
    document = json.loads(json.dumps(Outcome(Head.from_dict(stored), body).to_dict()))
    assert document == {k: stored[k] for k in document}
    left = {k: v for k, v in stored.items() if k not in document and k not in RUN_FACTS}
    assert set(left) == {"latency", "loadgen", "trial_p50_s", "variant_info", "training", "figures",
                         "server_search"}  # fmt: skip
    assert all(v in (None, []) for v in left.values())
    assert Outcome.from_dict("endpoint", document) == Outcome(Head.from_dict(stored), body)
    assert (
        document["audit"]["salts"]["verdict"] == "pass"
        and document["generation"]["curve"][1]["requests"] == 2
    )


def test_the_report_and_the_bundle_read_the_stored_curve() -> None:
    stored = _stored()
    result = from_dict(stored)
    decode = from_dict(json.loads((GOLDEN / "result_v7.json").read_text()))
    table = curve_table([result, decode])
    assert table is not None and table.row_count == 2
    console = Console(width=250, record=True)
    console.print(table)
    first = stored["generation"]["curve"][0]
    assert f"{first['output_tokens_per_s']:.1f}" in console.export_text()
    decoded = generation_table([result, decode])
    assert decoded is not None and decoded.row_count == 1
    points = tuple(CurvePoint.from_dict(p) for p in stored["generation"]["curve"])
    assert served_curve(bundle_claims(stored, "x.json")) == points
    broken = {**stored, "generation": {k: v for k, v in stored["generation"].items() if k != "model"}}
    with pytest.raises(UserError, match=r"x\.json is not a result document"):
        bundle_claims(broken, "x.json")


def test_replies_that_ended_early_are_a_warning_with_the_length_distribution() -> None:
    from accelbench.endpoint.outcome import length_warnings
    from accelbench.endpoint.records import RequestRecord

    def reply(tokens: int, status: str = "ok") -> RequestRecord:
        return RequestRecord(
            concurrency=1,
            index=0,
            role="timed",
            salt="ab",
            issue_s=0.0,
            send_s=0.0,
            first_content_s=0.1,
            end_s=1.0,
            chunk_s=(0.1,),
            text="x",
            output_tokens=tokens,
            usage_output_tokens=tokens,
            usage_prompt_tokens=9,
            status=status,
            error="",
        )

    assert length_warnings([reply(64), reply(62), reply(3, "http 500")], 64) == []  # 62: re-tokenizing
    (warning,) = length_warnings([reply(64), reply(64), reply(40), reply(12)], 64)
    assert warning.startswith("2 of 4 replies ended before 90% of max_tokens 64 (output tokens mean 45.0")
    assert "p10/p50/p90 20.4/52/64" in warning and "ignore EOS" in warning
