"""The typed outcome of a driver (``accelbench.outcome``): its document holds exactly the stored keys."""

from __future__ import annotations

import json
from pathlib import Path

from accelbench.cell.inference import LoadgenBody
from accelbench.cell.tokens_body import TokensBody
from accelbench.outcome import Head, Outcome
from accelbench.results import from_dict, to_dict
from accelbench.sections import SearchProbe, ServerSearch, TrainingFigures
from accelbench.training.measure import TrainingBody

GOLDEN = Path(__file__).parent.parent / "golden" / "result_v8.json"
RUN_FACTS = ("run_id", "cell", "machine_fingerprint", "started_at", "wall_s", "stderr_tail", "schema_version")


def _stored() -> dict:
    return json.loads(GOLDEN.read_text())


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
    assert LoadgenBody.from_dict(document) == body and Head.from_dict(document) == Head.from_dict(stored)
    facts = {k: stored[k] for k in RUN_FACTS}
    rebuilt = from_dict({**document, **facts, "generation": stored["generation"]})
    assert to_dict(rebuilt) == to_dict(result)


def test_the_token_and_training_bodies_write_their_sections() -> None:
    stored = _stored()
    result = from_dict(stored)
    assert result.loadgen and result.figures and result.generation is not None
    probe = SearchProbe(2.5, True, 0.4, 2.4, (), ttft_p99_s=0.3, tpot_p99_s=None)
    search = ServerSearch(1.0, 2.5, (2.5, None), 0.1, (probe,), 0.9)
    tokens = TokensBody(result.loadgen, result.figures, result.generation, search, result.audit)
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
    assert TokensBody.from_dict(document) == tokens
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
    assert TrainingBody.from_dict(training) == TrainingBody(TrainingFigures.from_dict(section))


def test_a_failed_outcome_is_a_status_and_a_reason_that_loads() -> None:
    document = Outcome.failed("crashed", "RuntimeError: boom").to_dict()
    assert document["status"] == "crashed" and document["reason"] == "RuntimeError: boom"
    assert document["warnings"] == [] and document["quality"] is None and document["settings"] == {}
    result = from_dict({**document, **{k: _stored()[k] for k in RUN_FACTS}})
    assert (result.status, result.reason, result.latency) == ("crashed", "RuntimeError: boom", None)
    assert Head.from_dict(document) == Outcome.failed("crashed", "RuntimeError: boom").head
