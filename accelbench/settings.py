"""The driver settings: each driver's own frozen record of the run's knobs it reads (issue 41).

A driver (``accelbench.registry.DRIVERS``) declares its settings record beside itself: frozen, typed, its
defaults resolved, built once in the parent from the run's ``RunConfig`` (``from_config``) and carried
in ``CellSpec.settings``. Across the process boundary the record is JSON tagged by the driver's name
(``to_dict``: ``{"driver": "endpoint", ...its fields}``), so ``from_dict`` rebuilds the right type from
this table. A knob the user sets is declared once, as a field of its driver's record
(``accelbench.knobs.knob``): the CLI's option, ``RunConfig.knobs`` and ``from_config`` (``knob_values``)
read the declarations here (``declared_knobs``), so a new knob is its field and the code that reads it; a
new driver adds its settings record and one row in ``registry.SETTINGS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, Self, TypeVar

from accelbench import registry
from accelbench.errors import UserError
from accelbench.knobs import Declared, Knobs, declared


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

    @classmethod
    def knobs_problem(cls, knobs: Knobs) -> str | None:
        """Why the run's ``knobs`` do not go together for this driver (its checks across its own
        knobs), or None."""
        ...


class KnobsAlone:
    """The ``knobs_problem`` of a settings record whose knobs have no check across each other: each is
    checked on its own (``accelbench.knobs.Knob.check``). A base of the frozen, slotted records."""

    __slots__ = ()

    @classmethod
    def knobs_problem(cls, knobs: Knobs) -> str | None:
        """None: no check across this record's knobs."""
        return None


Wanted = TypeVar("Wanted")


def record_type(driver: str) -> type[DriverSettings]:
    """The settings record of ``driver``; UserError for an unknown name."""
    known = registry.SETTINGS
    if driver not in known:
        raise UserError(f"unknown driver {driver[:80]!r} in a cell spec; known: {', '.join(sorted(known))}")
    found: type[DriverSettings] = registry.load(known[driver])
    return found


def declared_knobs() -> dict[str, Declared]:
    """Every driver's knobs by run-setting name (``accelbench.knobs``), in the drivers' order; TypeError
    when two records declare one name (a knob is declared once: records that share one take the same
    ``Knob``, ``accelbench.knobs.shared``, and the first record's declaration stands for it)."""
    found: dict[str, Declared] = {}
    for driver in registry.SETTINGS:
        for knob in declared(record_type(driver)):
            first = found.get(knob.name)
            one = first is None or (first.shared and knob.shared and first.knob is knob.knob)
            if not one or (first is not None and first.annotation != knob.annotation):
                raise TypeError(f"the knob {knob.name} is declared twice (driver {driver})")
            found.setdefault(knob.name, knob)
    return found


def knobs_problem(values: Knobs) -> str | None:
    """Why the run's knob ``values`` do not go together: the first problem a settings record's
    ``knobs_problem`` (its checks across its own knobs) finds, or None."""
    for driver in registry.SETTINGS:
        problem = record_type(driver).knobs_problem(values)
        if problem:
            return problem
    return None


def knob_values(record: type, config: Any) -> dict[str, Any]:
    """The knob fields of ``record`` as the run ``config`` sets them (its ``knobs`` by run-setting name; a
    knob it does not name keeps its default), by field name: what ``from_config`` passes on."""
    given = config.knobs
    return {k.field: k.resolved(given.get(k.name, k.setting_default)) for k in declared(record)}


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
