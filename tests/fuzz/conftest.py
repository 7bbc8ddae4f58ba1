"""A small store for the fuzz tests to leave untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.store_writer import write


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with one run of three results (written and closed, so its files are at rest)."""
    folder = tmp_path_factory.mktemp("fuzz") / "store"
    write(str(folder), "fuzz-run", 3)
    return folder
