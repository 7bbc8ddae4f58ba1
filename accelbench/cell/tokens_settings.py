"""The ``tokens`` driver's settings (``accelbench.cell.generation``): it reads no knob of its own."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from accelbench.settings import KnobsAlone

if TYPE_CHECKING:  # config loads this record at run time (its knobs): no import back then
    from accelbench.config import RunConfig


@dataclass(frozen=True, slots=True)
class TokensSettings(KnobsAlone):
    """A decode cell's settings: none beyond the spec's common head (``accelbench.settings``)."""

    driver: ClassVar[str] = "tokens"

    @classmethod
    def from_config(cls, config: RunConfig) -> TokensSettings:
        """The settings the run ``config`` asks for (none)."""
        return cls()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TokensSettings:
        """Inverse of ``to_dict``."""
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (empty)."""
        return {}
