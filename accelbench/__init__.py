"""accelbench: a fair, open, hard-to-game benchmark for AI acceleration.

The public API is small: results and their records, the error hierarchy, and the version. Everything
else is reached through the ``accelbench`` command line. The records load on first use, so that
``import accelbench`` (the console script's first step) takes milliseconds and a Ctrl-C during start-up
reaches the CLI's error boundary.
"""

import sys

try:  # runs before ``__main__``'s own guard: a Ctrl-C while the errors load is one line here too
    from accelbench.errors import AccelbenchError, CellError, Unavailable, Unsupported, UserError
except KeyboardInterrupt:
    sys.stderr.write("accelbench: error: interrupted\n")
    sys.exit(130)

__version__ = "0.1.0"

__all__ = [
    "SCHEMA_VERSION",
    "AccelbenchError",
    "Cell",
    "CellError",
    "Result",
    "Unavailable",
    "Unsupported",
    "UserError",
    "__version__",
]


def __getattr__(name: str) -> object:  # no typing import: start-up stays a few ms
    if name in ("SCHEMA_VERSION", "Cell", "Result"):
        from accelbench import results

        return getattr(results, name)
    raise AttributeError(name)
