"""A corrupt stored record never crashes a reader: whatever a result's document or a run's configuration
holds (a BLOB, JSON of another shape, a field of the wrong type, nesting deeper than the parser's stack),
``show``, ``export`` and ``report`` skip it with a warning and show the rest, ``store check`` names it, and
none of them writes to the store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from accelbench.store.schema import doc_sha256
from accelbench.store.sqlite import DB_NAME
from tests.fuzz.harness import copied_store, expect_no_traceback, tree_digest

FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
DEEP = "[" * 100_000 + "]" * 100_000
STORED = (
    st.binary(max_size=32)  # a BLOB
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)  # what SQLite stores
    | st.just(DEEP)
    | JSON_VALUES.map(lambda v: json.dumps(v, allow_nan=True))
)


def _update(store: Path, statement: str, values: tuple[Any, ...]) -> None:
    db = sqlite3.connect(store / DB_NAME, isolation_level=None)
    db.execute(statement, values)
    db.close()


def _readers(copy: Path) -> list[list[str]]:
    out = copy.parent / "out"
    return [
        ["show", "fuzz-run"],
        ["show", "fuzz-run", "--json"],
        ["export", "fuzz-run", "--format", "json", "-o", str(out / "e.json")],
        ["report", "fuzz-run", "-o", str(out / "r.html")],
    ]


def _read_all(copy: Path, kind: str) -> list[str]:
    """Every reader carries on and leaves the store as it was; the reasons of the results it exported."""
    before = tree_digest(copy)
    for command in _readers(copy):
        expect_no_traceback(kind, [*command, "--store", str(copy)])
    assert tree_digest(copy) == before
    return [d["reason"] for d in json.loads((copy.parent / "out" / "e.json").read_text())]


def _mutated(document: dict[str, Any], path: list[str], value: Any) -> dict[str, Any]:
    if len(path) == 1 or not isinstance(document.get(path[0]), dict):
        return {**document, path[0]: value}
    return {**document, path[0]: {**document[path[0]], path[1]: value}}


@FUZZ
@given(stored=STORED)
@example(stored=b"\x00a blob")
@example(stored=DEEP)
def test_a_result_document_of_any_shape(store: Path, stored: object) -> None:
    with copied_store(store) as copy:
        checksum = doc_sha256(stored) if isinstance(stored, str) else None
        _update(copy, "UPDATE results SET doc_json = ?, doc_sha256 = ? WHERE id = 2", (stored, checksum))
        assert _read_all(copy, "record-shape") == ["planted 0", "planted 2"]
        checked = expect_no_traceback("record-shape", ["store", "check", "--store", str(copy)], (1,))
        assert "fuzz-run/w1/" in checked.stdout


@FUZZ
@given(data=st.data(), value=JSON_VALUES)
def test_a_field_of_the_wrong_type(store: Path, data: st.DataObject, value: object) -> None:
    with copied_store(store) as copy:
        db = sqlite3.connect(copy / DB_NAME)
        document = json.loads(db.execute("SELECT doc_json FROM results WHERE id = 2").fetchone()[0])
        db.close()
        first = data.draw(st.sampled_from(sorted(document)))
        nested = sorted(document[first]) if isinstance(document[first], dict) else []
        path = [first, *([data.draw(st.sampled_from(nested))] if nested and data.draw(st.booleans()) else [])]
        text = json.dumps(_mutated(document, path, value), allow_nan=True)
        _update(
            copy, "UPDATE results SET doc_json = ?, doc_sha256 = ? WHERE id = 2", (text, doc_sha256(text))
        )
        shown = _read_all(copy, "record-field")
        checked = expect_no_traceback("record-field", ["store", "check", "--store", str(copy)], (0, 1))
        assert shown[0] == "planted 0" and shown[-1] == "planted 2"
        if len(shown) == 2:  # the readers skipped it: the check names it
            assert checked.code == 1 and "fuzz-run/w1/" in checked.stdout, checked.stdout


@FUZZ
@given(column=st.sampled_from(["config_json", "machine_json"]), stored=STORED)
@example(column="config_json", stored="[]")
@example(column="machine_json", stored="null")
def test_a_run_record_of_any_shape(store: Path, column: str, stored: object) -> None:
    with copied_store(store) as copy:
        _update(copy, f"UPDATE runs SET {column} = ?", (stored,))
        assert _read_all(copy, "run-shape") == ["planted 0", "planted 1", "planted 2"]
        expect_no_traceback("run-shape", ["store", "check", "--store", str(copy)], (0, 1))
