"""The command line: one module per group of commands, the shared options declared once (``options``)."""

from accelbench.cli.main import app, main

__all__ = ["app", "main"]
