"""An endpoint stack's side of the SUT process: its facts, read as data (``accelbench.endpoint.facts``).

The stack is imported and asked here, never in the cell process; the reply carries plain JSON only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from accelbench.errors import first_line
from accelbench.sut import wire

OP = "endpoint_describe"


def describe_stack(stack_of: Callable[[], Any], device: str) -> dict[str, Any]:
    """The reply of the ``endpoint_describe`` op: the facts of the stack ``stack_of`` gives, as JSON; a
    stack that does not load or fails to answer is unavailable with the first line of why."""
    try:
        stack = stack_of()
        reason = stack.unavailable_reason(device)
        facts = {"name": str(stack.name), "server": str(stack.server), "precision": str(stack.precision)}
        versions = wire.texts(stack.versions())
    except Exception as err:  # a plugin's failure is its cell's reason, never the SUT process's end
        return {"ok": True, "unavailable_reason": f"the endpoint stack fails: {first_line(err)}"}
    return {"ok": True, **facts, "unavailable_reason": str(reason) if reason else None, "versions": versions}
