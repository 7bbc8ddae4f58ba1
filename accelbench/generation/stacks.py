"""The table of generating stacks: name -> ``module:Class``, imported lazily.

``stack_status`` says for each one whether it can run here and, if not, why; a missing library is an
"unavailable: <reason>", never an import error.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from accelbench.errors import UserError
from accelbench.generation.base import GenerationStack
from accelbench.registry import GENERATING_STACKS, table

STACKS = GENERATING_STACKS
"""The built-in generating stacks; ``get_stack`` also finds the plugins (``accelbench.generation_stacks``)."""
REFERENCE = "torch-eager"


@dataclass(frozen=True, slots=True)
class StackStatus:
    """Whether a generating stack can run here."""

    name: str
    available: bool
    reason: str
    precision: str
    weight_format: str


def get_stack(name: str) -> GenerationStack:
    """An instance of the generating stack ``name``; raises UserError for an unknown name."""
    known = table("generating stack")
    if name not in known:
        raise UserError(f"unknown generating stack {name!r}; choose one of: {', '.join(known)}")
    module_name, _, class_name = known[name].partition(":")
    stack: GenerationStack = getattr(importlib.import_module(module_name), class_name)()
    return stack


def stack_status(name: str, device: str = "cpu") -> StackStatus:
    """Availability of ``name`` on ``device``, with the reason when it is unavailable."""
    stack = get_stack(name)
    reason = stack.unavailable_reason(device)
    return StackStatus(name, reason is None, reason or "", stack.precision, stack.weight_format)
