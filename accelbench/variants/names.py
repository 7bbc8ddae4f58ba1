"""Variant names and variant seeds: a name carries everything needed to draw the variant again.

A variant of a run is named ``s<variant_seed>-v<index>`` (index from 1); the canonical model is
``canonical``. The runner plans the names, the cell process redraws the variant from its name.
"""

from __future__ import annotations

import re
import secrets

from accelbench.errors import UserError

CANONICAL = "canonical"
SEED_LIMIT = 2**31
"""Fresh variant seeds are drawn from ``[0, SEED_LIMIT)``."""
_NAME = re.compile(r"^s(\d+)-v(\d+)$")


def variant_names(variant_seed: int, count: int) -> tuple[str, ...]:
    """The names of the first ``count`` variants drawn from ``variant_seed``."""
    return tuple(f"s{variant_seed}-v{index}" for index in range(1, count + 1))


def parse_name(name: str) -> tuple[int, int]:
    """``(variant_seed, index)`` of a variant name; a malformed name is a UserError."""
    match = _NAME.match(name)
    if not match or int(match.group(2)) < 1:
        raise UserError(f"malformed variant name {name!r}; expected s<seed>-v<index> or {CANONICAL}")
    return int(match.group(1)), int(match.group(2))


def fresh_seed() -> int:
    """A variant seed nobody can know in advance (``secrets``)."""
    return secrets.randbelow(SEED_LIMIT)
