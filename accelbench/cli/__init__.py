"""The command line: one module per group of commands, the shared options declared once (``options``).

``main`` is the console entry point. It loads the commands inside the error boundary (``boundary``),
so that a Ctrl-C or a failure while the heavy modules import is one line too; ``app`` (the typer app)
is loaded on first use.
"""

from __future__ import annotations

from typing import Any

from accelbench.cli.boundary import guarded, leave

__all__ = ["app", "console", "main"]


def main() -> None:
    """The typer app inside the error boundary (one line, exit 2/1/130), raising ``SystemExit``: for
    callers in their own process (tests)."""
    guarded(_run_app)


def console() -> None:
    """The console script and ``python -m accelbench``: ``main``, then out without the interpreter's
    teardown (``boundary.leave``)."""
    leave(_run_app)


_ENTRY = main


def _run_app() -> None:
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    _load_app()()


def _load_app() -> Any:
    """The typer app; importing the submodule ``main`` rebinds this package's ``main``, put back here."""
    from accelbench.cli.main import app as loaded

    globals()["main"] = _ENTRY
    return loaded


def __getattr__(name: str) -> Any:
    if name == "app":
        return _load_app()
    raise AttributeError(name)
