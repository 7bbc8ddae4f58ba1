"""The driver settings: each driver's own frozen record of the run's knobs it reads (issue 41).

A driver (``accelbench.registry.DRIVERS``) declares its settings record beside itself: frozen, typed, its
defaults resolved, built once in the parent from the run's ``RunConfig`` (``from_config``) and carried
in ``CellSpec.settings``. Across the process boundary the record is JSON tagged by the driver's name
(``to_dict``: ``{"driver": "endpoint", ...its fields}``), so ``from_dict`` rebuilds the right type from
this table. A new driver knob touches ``RunConfig`` (and the CLI that sets it), its driver's settings
module and the code that reads it; a new driver adds its settings record and one row in ``registry.SETTINGS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, Self, TypeVar

from accelbench.errors import UserError
from accelbench.registry import SETTINGS, load


class DriverSettings(Protocol):
    """What every driver's settings record offers (a frozen dataclass with these members)."""

    driver: ClassVar[str]
    """The name of the driver it belongs to (``registry.DRIVERS``): the tag of its JSON form."""

    @classmethod
    def from_config(cls, config: Any) -> Self:
        """The record a run's ``RunConfig`` asks for, its defaults resolved."""
        ...

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Inverse of ``to_dict`` (the fields, without the tag)."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """The record's fields as plain JSON (without the tag)."""
        ...


Wanted = TypeVar("Wanted")


def record_type(driver: str) -> type[DriverSettings]:
    """The settings record of ``driver``; UserError for an unknown name."""
    if driver not in SETTINGS:
        raise UserError(
            f"unknown driver {driver[:80]!r} in a cell spec; known: {', '.join(sorted(SETTINGS))}"
        )
    found: type[DriverSettings] = load(SETTINGS[driver])
    return found


def from_config(driver: str, config: Any) -> DriverSettings:
    """The settings of ``driver``'s cells in the run ``config`` (a ``RunConfig``)."""
    return record_type(driver).from_config(config)


def to_dict(settings: DriverSettings) -> dict[str, Any]:
    """``settings`` as JSON, tagged by its driver's name."""
    return {"driver": settings.driver, **settings.to_dict()}


def from_dict(data: Mapping[str, Any]) -> DriverSettings:
    """Inverse of ``to_dict``: the record of the driver its tag names."""
    fields = dict(data)
    driver = fields.pop("driver", None)
    if not isinstance(driver, str):
        raise UserError("a cell spec's settings name no driver")
    return record_type(driver).from_dict(fields)


def expect(settings: DriverSettings, wanted: type[Wanted]) -> Wanted:
    """``settings`` as the record ``wanted`` a driver reads; TypeError when the cell was given another
    driver's (a planning error: never measured with the wrong knobs)."""
    if not isinstance(settings, wanted):
        raise TypeError(f"the cell's settings are {settings.driver}'s, not {wanted.__name__}")
    return settings
