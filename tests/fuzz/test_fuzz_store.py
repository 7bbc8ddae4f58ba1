"""A truncated or corrupted store file, and a stored result from a newer schema: every command that reads
the store answers exit code 2 with one line naming the file, no traceback, and the bytes unchanged."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accelbench.results import SCHEMA_VERSION
from accelbench.store.schema import doc_sha256
from accelbench.store.sqlite import DB_NAME
from tests.fuzz.harness import copied_store, expect_user_error, outcome, tree_digest

FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
COMMANDS = (
    ["show", "fuzz-run"],
    ["export", "fuzz-run", "--format", "json", "-o", str(Path(tempfile.gettempdir()) / "fuzz-export.json")],
    ["store", "check"],
)


@FUZZ
@given(data=st.data(), command=st.sampled_from(COMMANDS))
def test_truncated_store_file(store: Path, data: st.DataObject, command: list[str]) -> None:
    with copied_store(store) as copy:
        db_file = copy / DB_NAME
        content = db_file.read_bytes()
        db_file.write_bytes(content[: data.draw(st.integers(min_value=1, max_value=len(content) - 1))])
        before = tree_digest(copy)
        expect_user_error("store-truncated", [*command, "--store", str(copy)], str(db_file))
        assert tree_digest(copy) == before


@FUZZ
@given(data=st.data(), command=st.sampled_from(COMMANDS))
def test_corrupted_store_file(store: Path, data: st.DataObject, command: list[str]) -> None:
    """Random bytes overwritten: either nothing that matters was hit (the command works and the store
    checks clean), or the command names the file on one line."""
    with copied_store(store) as copy:
        db_file = copy / DB_NAME
        content = bytearray(db_file.read_bytes())
        at = data.draw(st.integers(min_value=0, max_value=len(content) - 1))
        patch = data.draw(st.binary(min_size=1, max_size=64))
        content[at : at + len(patch)] = patch
        db_file.write_bytes(bytes(content[: len(db_file.read_bytes())]))
        before = tree_digest(copy)
        first = outcome([*command, "--store", str(copy)])
        # `store check` exits 1 when it names a problem it found (a checksum the bytes no longer hold)
        found = command == ["store", "check"] and first.code == 1 and "problem" in first.stdout + first.stderr
        if found and not first.traceback:
            assert tree_digest(copy) == before
            return
        if first.code == 0 and not first.traceback:  # what it read was intact or skipped; check reads all
            checked = outcome(["store", "check", "--store", str(copy)])
            assert not checked.traceback and checked.code in (0, 1, 2), checked.stdout + checked.stderr
            if checked.code == 2:
                expect_user_error("store-corrupted", ["store", "check", "--store", str(copy)], str(db_file))
        else:
            expect_user_error("store-corrupted", [*command, "--store", str(copy)], str(db_file))
        assert tree_digest(copy) == before


def test_a_result_from_a_newer_schema(store: Path) -> None:
    with copied_store(store) as copy:
        db = sqlite3.connect(copy / DB_NAME, isolation_level=None)
        text, row_id = db.execute("SELECT doc_json, id FROM results ORDER BY id LIMIT 1").fetchone()
        newer = json.dumps({**json.loads(text), "schema_version": SCHEMA_VERSION + 1, "a_new_section": {}})
        db.execute(
            "UPDATE results SET doc_json = ?, doc_sha256 = ? WHERE id = ?", (newer, doc_sha256(newer), row_id)
        )
        db.close()
        before = tree_digest(copy)
        for command in COMMANDS[:2]:
            result = expect_user_error(
                "store-newer-schema", [*command, "--store", str(copy)], str(copy / DB_NAME)
            )
            assert f"schema_version {SCHEMA_VERSION + 1}" in result.stderr
        assert tree_digest(copy) == before
        checked = outcome(["store", "check", "--store", str(copy)])
        assert (
            checked.code == 1
            and f"schema_version {SCHEMA_VERSION + 1}" in checked.stdout
            and not checked.traceback
        )
