"""Fixtures the end-to-end modules share."""

from __future__ import annotations

import pytest

from tests.e2e.shared_run import TinyRun, tiny_run_of


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> TinyRun:
    """One tiny-suite run for the whole session (``tests.e2e.shared_run``): read it, never write it."""
    return tiny_run_of(tmp_path_factory.mktemp("tiny-suite") / "store")
