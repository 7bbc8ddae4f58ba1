"""A driver's knobs, each declared once on its settings record (issue 41).

A knob is a field of a driver's settings record (``accelbench.settings``) declared with ``knob``: its
default, its command-line flag and help, how the flag's text is parsed and what values it refuses. The
run setting's name (its TOML key in ``[run]`` and its key in the stored configuration) is the flag's
words joined by ``_`` (``--batch-sweep``: ``batch_sweep``). From those declarations ``accelbench run``
gets its option (``accelbench.cli.knob_options``), ``RunConfig`` its ``knobs`` record (checked, stored
flat) and the settings record its value (``accelbench.settings.knob_values``). A new knob is its field
here and the code that reads it::

    turns: int = knob(3, flag="--session-turns", help="Served LLMs: turns per session (3).")

A knob that two drivers read (``--output-tokens``: a request's reply on the curve, a turn's in a session)
is one ``Knob`` that each record's field takes with ``shared`` and its own default; its ``unset`` value
stands for that default, so the run stores one setting and each driver resolves it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

KNOB = "accelbench.knob"
"""The key of a knob's declaration in its field's metadata."""
SHARED = "accelbench.knob.shared"
"""The key, in a field's metadata, marking a knob taken with ``shared`` (other records take it too)."""
ABSENT: Any = object()
"""``Knob.unset`` when the run's value is the field's own (no value stands for the default)."""

Value = TypeVar("Value")


@dataclass(frozen=True, slots=True)
class Knob:
    """How the user sets one field of a driver's settings record."""

    flag: str
    """The ``accelbench run`` option, e.g. ``--batch-sweep``."""
    help: str
    parse: Callable[[str], Any] | None = None
    """The option's text to the value (a list's commas); None: the field's own type parses it. Raises
    ``UserError`` for text it refuses."""
    check: Callable[[Any], str | None] | None = None
    """Why a value (from the CLI, a TOML file or a stored configuration) is refused, or None."""
    unset: Any = ABSENT
    """The run's value that stands for the field's default (``0``, ``""``): the run setting's own default,
    stored as such; the settings record gets the field's default for it."""
    setting: str = ""
    """The run setting's name when it is not the flag's (``--session-rate``: ``session_rates``), or of a
    knob with no flag (set in a TOML file or by the run itself)."""

    @property
    def name(self) -> str:
        """The run setting's name: the TOML key and the stored configuration's key."""
        return self.setting or self.flag.removeprefix("--").replace("-", "_")


def knob(
    default: Value,
    *,
    flag: str,
    help: str,
    parse: Callable[[str], Any] | None = None,
    check: Callable[[Any], str | None] | None = None,
    unset: Any = ABSENT,
    setting: str = "",
) -> Value:
    """A settings record's field that the user sets: ``default`` (an immutable value) and its option
    (none when ``flag`` is empty: ``setting`` names it)."""
    declaration = Knob(flag=flag, help=help, parse=parse, check=check, unset=unset, setting=setting)
    field: Value = dataclasses.field(default=default, metadata={KNOB: declaration})
    return field


def shared(declaration: Knob, default: Value) -> Value:
    """A settings record's field that takes the knob ``declaration`` (one that other records take too)
    with this record's ``default``; the declaration's ``unset`` stands for it."""
    if declaration.unset is ABSENT:
        raise TypeError(f"the shared knob {declaration.name} needs an unset value (each record's default)")
    field: Value = dataclasses.field(default=default, metadata={KNOB: declaration, SHARED: True})
    return field


@dataclass(frozen=True, slots=True)
class Declared:
    """One knob as its settings record declares it."""

    field: str
    """The field's name in its settings record."""
    annotation: str
    """The field's type as written (``int``, ``tuple[int, ...]``, ``int | None``)."""
    default: Any
    knob: Knob
    shared: bool = False
    """Taken with ``shared``: other records may take the same ``Knob`` (each with its own default)."""

    @property
    def name(self) -> str:
        """The run setting's name (``Knob.name``)."""
        return self.knob.name

    @property
    def setting_default(self) -> Any:
        """The run setting's default: ``Knob.unset`` when it has one, else the field's default."""
        return self.default if self.knob.unset is ABSENT else self.knob.unset

    def resolved(self, value: Any) -> Any:
        """The field's value for the run's ``value`` (``Knob.unset`` becomes the field's default)."""
        return self.default if self.knob.unset is not ABSENT and value == self.knob.unset else value


def declared(record: type) -> tuple[Declared, ...]:
    """The knobs of the settings record ``record`` (a dataclass), in field order."""
    return tuple(
        Declared(f.name, str(f.type), f.default, f.metadata[KNOB], shared=f.metadata.get(SHARED, False))
        for f in dataclasses.fields(record)
        if KNOB in f.metadata
    )


@dataclass(frozen=True, slots=True)
class Knobs:
    """A run's knob values by run-setting name: every declared knob, given or at its default."""

    values: tuple[tuple[str, Any], ...] = ()
    """(name, value) pairs, sorted by name (immutable; lists are tuples)."""

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Knobs:
        """The record of ``values`` (a list becomes a tuple)."""
        pairs = ((name, tuple(v) if isinstance(v, list) else v) for name, v in values.items())
        return cls(tuple(sorted(pairs)))

    def __getitem__(self, name: str) -> Any:
        for key, value in self.values:
            if key == name:
                return value
        raise KeyError(name)

    def get(self, name: str, default: Any = None) -> Any:
        """The value of ``name``, else ``default``."""
        return dict(self.values).get(name, default)

    def __contains__(self, name: object) -> bool:
        return any(key == name for key, _ in self.values)

    def __iter__(self) -> Iterator[str]:
        return (key for key, _ in self.values)

    def to_dict(self) -> dict[str, Any]:
        """The values by name (tuples kept)."""
        return dict(self.values)
