"""What the SUT process does for any stack it hosts (an inference stack's sessions, a generating
stack's generators): the reason a stack that does not even load is unavailable, and the torch threads
of a process forked from a template that imported torch before the cell's threads were known."""

from __future__ import annotations

import sys

REASON_CHARS = 500
"""The longest unavailable reason a stack that does not load gets."""


def load_failure(err: BaseException) -> str:
    """The unavailable reason of a stack whose code raised ``err`` on loading (a plugin that does not
    even import is unavailable, not a crash)."""
    return f"stack does not load: {type(err).__name__}: {err}"[:REASON_CHARS]


def set_torch_threads(threads: int) -> None:
    """Give torch ``threads`` intra-op threads when it is already imported (by the template this
    process was forked from); a stack that imports it later sets its own."""
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)
