"""The typed outcome of a driver (``accelbench.outcome``): its document holds exactly the stored keys, the
parent reads it back by the records of the driver that wrote it, and the result is its fields and the run
facts (``accelbench.cell.pipeline.result_of``)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from accelbench import registry
from accelbench.cell.inference import LoadgenBody
from accelbench.cell.pipeline import result_of
from accelbench.cell.tokens_body import TokensBody
from accelbench.cellspec import PlannedCell
from accelbench.head import Head
from accelbench.outcome import Outcome
from accelbench.results import Result
from accelbench.sections import SearchProbe, ServerSearch, TrainingFigures
from accelbench.stored import from_dict, to_dict
from accelbench.training.measure import TrainingBody

GOLDEN = Path(__file__).parent.parent / "golden" / "result_v8.json"
RUN_FACTS = ("run_id", "cell", "machine_fingerprint", "started_at", "wall_s", "stderr_tail", "schema_version")


def _stored() -> dict:
    return json.loads(GOLDEN.read_text())


def _planned(result: Result, driver: str) -> PlannedCell:
    return PlannedCell(result.cell, "workload:Ref", "stack:Ref", registry.DRIVERS[driver])


def _result_of(result: Result, driver: str, outcome: Outcome) -> Result:
    """The result the parent builds of ``outcome`` with ``result``'s run facts."""
    facts = (result.machine_fingerprint, result.started_at, result.wall_s, result.stderr_tail)
    return result_of(result.run_id, _planned(result, driver), outcome, *facts)


def test_a_loadgen_outcome_is_the_stored_document_without_the_run_facts() -> None:
    stored = _stored()
    result = from_dict(stored)
    assert result.latency and result.loadgen and result.figures
    body = LoadgenBody(
        latency=result.latency,
        loadgen=result.loadgen,
        figures=result.figures,
        trial_p50_s=result.trial_p50_s,
        audit=result.audit,
        variant_info=result.variant_info,
    )
    document = Outcome(Head.from_dict(stored), body).to_dict()
    expected = {k: v for k, v in stored.items() if k not in (*RUN_FACTS, "generation", "training")}
    assert json.loads(json.dumps(document)) == expected
    read = Outcome.from_dict("loadgen", json.loads(json.dumps(document)))
    assert read == Outcome(Head.from_dict(stored), body) and read.head == Head.from_dict(document)
    rebuilt = _result_of(result, "loadgen", read)
    assert rebuilt.driver == "loadgen" and rebuilt.decode is None and rebuilt.training is None
    changed = {"driver": "loadgen", "stderr_tail": ""}  # an ok cell keeps no stderr
    assert rebuilt == dataclasses.replace(result, body=body, **changed)
    assert to_dict(rebuilt) == {**to_dict(result), "generation": None, **changed}


def test_a_document_the_drivers_body_cannot_read_does_not_load() -> None:
    document = json.loads(json.dumps(_loadgen_outcome().to_dict()))
    with pytest.raises(KeyError, match="generation"):
        Outcome.from_dict("tokens", document)  # a LoadGen cell's document holds no generation section
    assert Outcome.from_dict("loadgen", document) == _loadgen_outcome()
    with pytest.raises(ValueError, match="driver 'no-such-driver': no body of that name reads them"):
        Outcome.from_dict("no-such-driver", document)


def _loadgen_outcome() -> Outcome:
    result = from_dict(_stored())
    assert result.latency and result.loadgen and result.figures
    body = LoadgenBody(
        latency=result.latency,
        loadgen=result.loadgen,
        figures=result.figures,
        trial_p50_s=result.trial_p50_s,
        audit=result.audit,
        variant_info=result.variant_info,
    )
    return Outcome(Head.from_dict(_stored()), body)


def test_the_token_and_training_bodies_write_their_sections() -> None:
    stored = _stored()
    result = from_dict(stored)
    assert result.loadgen and result.figures and result.decode is not None
    probe = SearchProbe(2.5, True, 0.4, 2.4, (), ttft_p99_s=0.3, tpot_p99_s=None)
    search = ServerSearch(1.0, 2.5, (2.5, None), 0.1, (probe,), 0.9)
    tokens = TokensBody(result.loadgen, result.figures, result.decode, search, result.audit)
    document = json.loads(json.dumps(tokens.to_dict()))
    assert document["generation"] == stored["generation"] and document["audit"] == stored["audit"]
    assert document["figures"] == stored["figures"]
    assert document["server_search"]["probes"] == [
        {
            "target_qps": 2.5,
            "valid": True,
            "p99_s": 0.4,
            "completed_qps": 2.4,
            "reasons": [],
            "ttft_p99_s": 0.3,
        }
    ]
    assert ServerSearch.from_dict(document["server_search"]) == search
    read = Outcome.from_dict("tokens", {"status": "ok", **document})
    assert read == Outcome(Head("ok"), tokens)
    rebuilt = _result_of(result, "tokens", read)
    assert rebuilt.driver == "tokens" and rebuilt.decode == result.decode and rebuilt.server_search == search
    run = {
        "seed": 3,
        "time_to_quality_s": 2.0,
        "converged": False,
        "quality": 0.5,
        "epochs": 4,
        "samples": 64,
    }
    section = {"runs": [run], "olympic_mean_s": None, "runs_converged": 0, "target": 0.9, "nproc": 1}
    training = TrainingBody(TrainingFigures.from_dict(section)).to_dict()
    assert (training["latency"], training["loadgen"]) == (None, None)
    assert training["training"]["runs"] == [{**run, "energy_j": None, "log_file": ""}]
    assert TrainingFigures.from_dict(training["training"]) == TrainingFigures.from_dict(section)
    read = Outcome.from_dict("train-to-quality", {"status": "ok", **training})
    assert read.body == TrainingBody(TrainingFigures.from_dict(section))
    rebuilt = _result_of(result, "train-to-quality", read)
    assert rebuilt.training == TrainingFigures.from_dict(section) and rebuilt.latency is None


def test_a_failed_outcome_is_a_status_and_a_reason_that_loads() -> None:
    document = Outcome.failed("crashed", "RuntimeError: boom").to_dict()
    assert document["status"] == "crashed" and document["reason"] == "RuntimeError: boom"
    assert document["warnings"] == [] and document["quality"] is None and document["settings"] == {}
    result = from_dict({**document, **{k: _stored()[k] for k in RUN_FACTS}})
    assert (result.head.status, result.head.reason, result.latency) == ("crashed", "RuntimeError: boom", None)
    assert Outcome.from_dict("tokens", document) == Outcome.failed("crashed", "RuntimeError: boom")
    imposed = {"status": "timeout", "reason": "no result after 60 s; process group killed"}
    timed_out = Outcome.from_dict("loadgen", imposed)
    assert timed_out == Outcome.failed(imposed["status"], imposed["reason"]) and timed_out.body is None
    stored = from_dict(_stored())
    measured = _result_of(dataclasses.replace(stored, stderr_tail="Traceback"), "tokens", timed_out)
    assert (measured.head.status, measured.driver, measured.stderr_tail) == ("timeout", "tokens", "Traceback")
    assert (measured.latency, measured.decode, measured.audit) == (None, None, None)
