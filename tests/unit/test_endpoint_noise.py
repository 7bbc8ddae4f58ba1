"""The noise guard on an endpoint cell (issue 31 scope 4): a disturbed curve is ``unstable`` like any
other cell, with the guard's evidence stored; a quiet one is not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from accelbench.cellspec import CellSpec, Folders, Refs
from accelbench.endpoint.accuracy import Accuracy
from accelbench.endpoint.facts import EndpointFacts
from accelbench.endpoint.figures import Bounds, point
from accelbench.endpoint.outcome import Found, Setup, outcome
from accelbench.endpoint.records import RequestRecord
from accelbench.endpoint.settings import EndpointSettings
from accelbench.generation.models import LlmModel
from accelbench.head import NoiseProbe
from accelbench.results import Cell

BUSY = "unstable: other processes kept 0.90 cores busy while it ran (limit 0.10)"
LIMITS = Bounds(2.0, 0.2)


def _record(index: int) -> RequestRecord:
    """An honest reply of 8 tokens at concurrency 2, 0.1 s to its first token, 0.05 s per token."""
    chunks = tuple(0.1 + 0.05 * i for i in range(8))
    return RequestRecord(
        concurrency=2, index=index, role="timed", salt=f"{index:032x}", issue_s=0.0, send_s=0.0,
        first_content_s=chunks[0], end_s=chunks[-1] + 0.01, chunk_s=chunks, text="x" * 8, output_tokens=8,
        usage_output_tokens=8, usage_prompt_tokens=20, status="ok", error="", finish_reason="length",
    )  # fmt: skip


def _probe(other_cores: float, reason: str) -> NoiseProbe:
    return NoiseProbe(0.1, 0.1, 0.0, 1.0, 1.5, other_cores, bool(reason), reason=reason)


def _outcome(tmp_path: Path, probe: NoiseProbe | None) -> dict[str, Any]:
    cell = Cell("tiny-llama", "llm@url", "single-stream", "cpu", "standard", "canonical")
    settings = EndpointSettings(
        ladder=(2,), requests=4, max_tokens=8, api_key_env="KEY", serve_url="http://127.0.0.1:8000"
    )
    spec = CellSpec(
        run_id="r1",
        cell=cell,
        refs=Refs("w", "s", "d"),
        rules="quick",
        threads=2,
        seed=0,
        input_seed=7,
        samples=0,
        folders=Folders(str(tmp_path / "cell"), str(tmp_path), str(tmp_path), str(tmp_path / "outcome.json")),
        settings=settings,
    )
    model = LlmModel("tiny-llama", tmp_path, 2, 100, 1000, "tiny", 0.0)
    records = [_record(i) for i in range(4)]
    accuracy = Accuracy(1.0, (1.0,) * 4, (2,), True)
    found = Found(
        curve=(point(2, records, LIMITS),),
        timed=records,
        stopped="",
        duration_s=1.0,
        accuracy=accuracy,
        probe=probe,
    )
    stack = EndpointFacts(name="llm@url", server="url", precision="server's", unavailable_reason=None)
    setup = Setup(spec=spec, stack=stack, model=model, settings=settings, lengths=(8, 48), limits=LIMITS)
    return outcome(setup, found).to_dict()


def test_a_disturbed_curve_is_unstable_with_the_guards_evidence(tmp_path: Path) -> None:
    busy = _probe(0.9, BUSY)
    document = _outcome(tmp_path, busy)
    assert (document["status"], document["reason"]) == ("unstable", BUSY)
    assert document["noise"]["other_load_cores"] == 0.9 and document["noise"]["unstable"] is True
    assert document["warnings"] == ["machine busy: other processes used 0.90 cores meanwhile"]
    assert [document["audit"][name]["verdict"] for name in ("salts", "first_chunk", "token_count")] == [
        "pass"
    ] * 3


def test_a_quiet_curve_is_ok_and_keeps_its_noise_record(tmp_path: Path) -> None:
    quiet = _probe(0.02, "")
    document = _outcome(tmp_path, quiet)
    assert (document["status"], document["reason"], document["warnings"]) == ("ok", "", [])
    assert document["noise"]["other_load_cores"] == 0.02 and document["noise"]["unstable"] is False
    unwatched = _outcome(tmp_path, None)
    assert unwatched["status"] == "ok" and unwatched["noise"] is None
