"""Shared fixtures: planted stacks registered for in-process runs, a store per test."""

from __future__ import annotations

# setuptools first: in-process stack tests share one interpreter, and once a stack's library has imported
# the standard library's distutils, setuptools' distutils hack makes torch inductor's C++ builder fail
# (AssertionError naming distutils/core.py). Cells run in fresh processes, where this cannot happen.
import setuptools  # noqa: F401  # isort: skip
import pytest

from accelbench import registry

PLANTED = {
    "planted-crash": "tests.e2e.planted:CrashStack",
    "planted-hang": "tests.e2e.planted:HangStack",
    "planted-raise": "tests.e2e.planted:RaiseStack",
    "planted-noisy": "tests.e2e.planted:NoisyStack",
    "planted-daemon": "tests.e2e.planted:DaemonStack",
}


@pytest.fixture
def planted_stacks(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Register the planted faulty stacks in the stack table for this test."""
    table = dict(registry.STACKS)
    table.update(PLANTED)
    monkeypatch.setattr(registry, "STACKS", table)
    monkeypatch.setitem(registry._BUILTIN, "stack", table)
    return PLANTED
