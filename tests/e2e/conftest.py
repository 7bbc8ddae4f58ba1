"""Fixtures the end-to-end modules share."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.cli import accelbench
from tests.e2e.shared_run import TinyRun, tiny_run_of


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> TinyRun:
    """One tiny-suite run for the whole session (``tests.e2e.shared_run``): read it, never write it."""
    return tiny_run_of(tmp_path_factory.mktemp("tiny-suite") / "store")


@pytest.fixture(scope="session")
def listed_stacks() -> dict[str, dict[str, Any]]:
    """``accelbench list stacks --json`` once for the session (it imports every stack: ~5 s), its rows by
    name: read it, never write it."""
    done = accelbench("list", "stacks", "--json", timeout_s=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return {row["name"]: row for row in json.loads(done.stdout)}
