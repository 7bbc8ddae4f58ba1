"""A sessions cell's ladder derived again from the ``turns.jsonl`` its bundle carries (``bundle.ladder``):
a bundle built from turn records whose points ``sessions.figures.point`` made verifies; a turn record
edited (its TTFT halved), a point dropped from the ladder or an edited reuse figure, with the MANIFEST
rewritten to match, does not.

``sessions_bundle`` builds the whole bundle (every member ``bundle verify`` reads); the identity tests
(``test_bundle_identity``) tamper with it too."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from accelbench.audit_section import AuditSection
from accelbench.bundle.archive import read_archive, write_archive
from accelbench.bundle.collect import FORMAT
from accelbench.bundle.verify import Finding, Verification, verify
from accelbench.endpoint.figures import Bounds
from accelbench.endpoint.records import RequestRecord
from accelbench.hardware.detect import Machine, machine_to_dict
from accelbench.head import Head
from accelbench.results import Cell, Result
from accelbench.session_figures import SessionFigures
from accelbench.sessions import reuse
from accelbench.sessions.body import SessionsBody
from accelbench.sessions.driver import TURN
from accelbench.sessions.figures import point
from accelbench.sessions.forbidden import ALTERED, CONTROL
from accelbench.sessions.load import Load, Opened
from accelbench.sessions.records import TurnRecord
from accelbench.stored import to_dict
from tests.unit.test_bundle_served import streamed

RUN_ID = "20260101T000000Z-abcd"
FOLDER = "000-sessions"
CELL = Cell(workload="agentic-llm", stack="llm@url", device="cpu", scenario="sessions", size="tiny")
SLO = Bounds(ttft_s=0.05, tpot_s=0.02)
LOADS = (Load(2), Load(0, 1.5))
MACHINE = Machine(
    cpu_model="Test CPU",
    cpu_vendor="GenuineIntel",
    cpu_family=6,
    cpu_model_number=85,
    cpu_stepping=7,
    microarchitecture="cascadelake",
    model_hidden=False,
    logical_cores=2,
    physical_cores=1,
    sockets=1,
    isa_flags=("avx2",),
    caches=(),
    mem_bytes=2**33,
    os_name="Linux",
    kernel="6.1",
    python_version="3.11.9",
)
VERSIONS = {"accelbench": "0.1.0", "numpy": "2.1.0", "python": "3.11.9"}
TURN_PATH = f"cells/{FOLDER}/turns.jsonl"


def _request(load: Load, index: int, role: str = TURN, concurrency: int | None = None) -> RequestRecord:
    issue = 0.2 * index
    first, gap = issue + 0.01 + 0.004 * (index % 5), 0.005 * (1 + index % 3)
    return streamed(
        load.sessions if concurrency is None else concurrency,
        index,
        role,
        first,
        gap,
        6,
        issue_s=issue,
        usage_prompt_tokens=40 + index,
        target_qps=load.rate_per_s,
        usage_cached_tokens=16 * (index % 2),
    )


def _turn(request: RequestRecord, session: int, turn: int) -> TurnRecord:
    return TurnRecord(
        session=session,
        turn=turn,
        kind="user" if turn == 0 else "tool",
        delay_s=0.1 * turn,
        context_tokens=50 + 40 * turn + session,
        request=request,
    )


def _point_records(load: Load, sessions: int) -> tuple[list[TurnRecord], list[TurnRecord]]:
    """A point's timed turns (3 per session) and an altered audit pair sent while it ran."""
    turns = [_turn(_request(load, 10 * s + t), s, t) for s in range(sessions) for t in range(3)]
    pair = [_turn(_request(load, 7 + k, role=ALTERED + CONTROL * k), 0, 1) for k in range(2)]
    return turns, pair


def _reuse_records() -> list[TurnRecord]:
    """The reuse probe's warm and cold sends after the ladder (concurrency 0, no rate)."""
    return [
        _turn(_request(Load(0), 60 + k, role, concurrency=0), 1, 2) for k, role in enumerate(["warm", "cold"])
    ]


def _section(records: list[TurnRecord]) -> SessionFigures:
    """The ladder as ``sessions.cell.run_ladder`` makes it, and the reuse figures, read back through JSON."""
    ladder = []
    for load in LOADS:
        mine = [r for r in records if Load.of(r.request) == load]
        turns = [r for r in mine if r.request.role == TURN]
        audits = [r for r in mine if r.request.role != TURN]
        started = sorted({r.session for r in turns})
        opened = None
        if load.rate_per_s is not None:  # what the driver saw of a rate point: not in the records
            opened = Opened(load.rate_per_s, len(started), tuple(0.4 * s for s in started), 2, "")
        ladder.append(point(len(started), turns, SLO, opened=opened, audits=audits))
    figures = SessionFigures(
        endpoint="llm@url",
        model="tiny",
        params=1_000_000,
        workload="synthetic-agentic",
        turns_per_session=3,
        max_tokens=6,
        shared_prefix_tokens=40,
        sessions_ladder=tuple(ladder),
        turns_file=TURN_PATH,
        duration_s=9.0,
        reuse=reuse.figures([r for r in records if r.request.role in (reuse.WARM, reuse.COLD)]),
        turn_slo_ttft_s=SLO.ttft_s,
        turn_slo_tpot_s=SLO.tpot_s,
    )
    return SessionFigures.from_dict(json.loads(json.dumps(figures.to_dict())))


def turn_lines() -> list[dict[str, Any]]:
    """Every line of the cell's ``turns.jsonl``, as the sessions cell writes them."""
    records: list[TurnRecord] = []
    for load, sessions in zip(LOADS, (2, 3), strict=True):
        turns, pair = _point_records(load, sessions)
        records += turns + pair
    return [r.to_dict() for r in records + _reuse_records()]


def sessions_bundle(lines: list[dict[str, Any]] | None = None) -> dict[str, bytes]:
    """Every member of an honest bundle of a run with one sessions cell (no MANIFEST: written with it)."""
    lines = turn_lines() if lines is None else lines
    records = [TurnRecord.from_dict(line) for line in lines]
    head = Head("ok", effective_precision="bf16", versions=VERSIONS, settings={"threads": 1})
    body = SessionsBody(session_ladder=_section(records), audit=AuditSection({}))
    result = Result(RUN_ID, CELL, head, body, machine_fingerprint=MACHINE.fingerprint, driver="sessions")
    header = {"format": FORMAT, "run_id": RUN_ID, "cells": {CELL.key: FOLDER}, "signed": False}
    run = {"run_id": RUN_ID, "machine_fingerprint": MACHINE.fingerprint, "config": {"rules": "quick"}}
    distributions = {"accelbench": "0.1.0", "numpy": "2.1.0"}
    return {
        "bundle.json": _json(header),
        "run.json": _json(run),
        "machine.json": _json(machine_to_dict(MACHINE)),
        "versions.json": _json({"python": "3.11.9", "distributions": distributions}),
        "results/000.json": _json(to_dict(result)),
        TURN_PATH: "".join(json.dumps(line, sort_keys=True) + "\n" for line in lines).encode(),
    }


def edited(files: Mapping[str, bytes], path: str, edit: Callable[[Any], None]) -> dict[str, bytes]:
    """``files`` with the JSON member ``path`` changed in place by ``edit``."""
    document = json.loads(files[path])
    edit(document)
    return {**files, path: _json(document)}


def verified(files: Mapping[str, bytes], tmp_path: Path) -> Verification:
    """``files`` written as a bundle (its MANIFEST made for them: a re-hashed edit) and verified."""
    write_archive(tmp_path / "b.tar.gz", dict(files))
    return verify(read_archive(tmp_path / "b.tar.gz"))


def finding(checked: Verification, check: str) -> Finding:
    (found,) = [f for f in checked.findings if f.check == check]
    return found


def _json(value: Any) -> bytes:
    return (json.dumps(value, indent=1, sort_keys=True) + "\n").encode()


def test_an_honest_sessions_bundle_verifies_with_its_ladder_derived_again(tmp_path: Path) -> None:
    checked = verified(sessions_bundle(), tmp_path)
    assert checked.passed, [f for f in checked.findings if f.matched is False]
    ladder = finding(checked, "ladder")
    assert ladder.matched is True and ladder.detail == "2 point(s) derived from 21 turn record(s)"


def test_a_turn_record_with_its_ttft_halved_differs(tmp_path: Path) -> None:
    honest = sessions_bundle()
    lines = turn_lines()
    line = lines[4]  # session 1, turn 1 of the 2-session point
    line["first_content_s"] = line["issue_s"] + (line["first_content_s"] - line["issue_s"]) / 2
    tampered = {**honest, TURN_PATH: sessions_bundle(lines)[TURN_PATH]}
    checked = verified(tampered, tmp_path)
    ladder = finding(checked, "ladder")
    assert ladder.matched is False and not checked.passed
    assert "2 sessions: ttft_p50_s " in ladder.detail and "2 sessions: turn 1 ttft_p50_s " in ladder.detail
    assert ladder.detail.startswith("turns.jsonl vs the stored ladder: ")


def test_a_point_dropped_from_the_ladder_differs(tmp_path: Path) -> None:
    def drop_rate_point(document: dict[str, Any]) -> None:
        document["generation"]["sessions_ladder"].pop()

    checked = verified(edited(sessions_bundle(), "results/000.json", drop_rate_point), tmp_path)
    assert "1.5 sessions/s: turn records, no stored point" in finding(checked, "ladder").detail


def test_an_edited_rate_point_and_reuse_figure_differ(tmp_path: Path) -> None:
    def raise_figures(document: dict[str, Any]) -> None:
        document["generation"]["sessions_ladder"][1]["sessions"] = 4
        document["generation"]["reuse"]["ttft_drop"] = 0.9

    checked = verified(edited(sessions_bundle(), "results/000.json", raise_figures), tmp_path)
    detail = finding(checked, "ladder").detail
    assert "1.5 sessions/s: sessions 3 from the records, stored 4" in detail
    assert "reuse: ttft_drop " in detail and "stored 0.9" in detail


def test_a_sessions_bundle_without_its_turn_records_differs(tmp_path: Path) -> None:
    files = {k: v for k, v in sessions_bundle().items() if k != TURN_PATH}
    ladder = finding(verified(files, tmp_path), "ladder")
    assert ladder.matched is False and ladder.detail == "2 point(s) stored; no turns.jsonl"


def test_every_stored_point_field_is_derived_again_or_named_as_not() -> None:
    """A figure added to ``SessionPoint`` must be compared by ``verify`` or named in ``NOT_DERIVED``."""
    import dataclasses

    from accelbench.bundle.ladder import COMPARED, NOT_DERIVED, WHERE_STORED
    from accelbench.session_figures import SessionPoint

    named = (*COMPARED, *WHERE_STORED, *NOT_DERIVED, "by_turn", "rate_per_s")
    assert sorted(named) == sorted({f.name for f in dataclasses.fields(SessionPoint)})
