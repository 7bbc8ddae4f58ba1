"""Check that a record loaded from stored JSON holds the types its dataclass declares.

``from_dict`` builds records from whatever a stored document holds; a field of the wrong type (a
``reason`` that is a number, a ``latency`` whose ``p50_s`` is a string, a ``versions`` that is a list)
would pass through and crash a reader later, far from the record. ``check_record`` walks the record's
dataclass fields against their type hints (``str``, ``int``, ``float``, ``bool``, ``None``, unions,
``tuple[X, ...]``, ``tuple[X, Y]``, ``Mapping[K, V]``, nested records; ``Any`` accepts anything) and
raises ``TypeError`` naming the first field that does not match.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any


def check_record(record: Any, where: str = "") -> None:
    """TypeError naming the first field of ``record`` (a dataclass) whose value is not its declared type."""
    hints = _hints(type(record))
    for field in dataclasses.fields(record):
        value = getattr(record, field.name)
        if not _matches(value, hints[field.name], f"{where}{field.name}"):
            raise TypeError(f"field {where}{field.name} holds {type(value).__name__} {_shown(value)}")


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(kind: type) -> dict[str, Any]:
    if kind not in _HINTS:
        _HINTS[kind] = typing.get_type_hints(kind)
    return _HINTS[kind]


def _matches(value: Any, hint: Any, where: str) -> bool:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, arg, where) for arg in args)
    if origin is tuple:
        return isinstance(value, tuple) and _tuple_matches(value, args, where)
    if origin in (Mapping, dict):
        key, item = args or (Any, Any)
        return isinstance(value, Mapping) and all(
            _matches(k, key, where) and _matches(v, item, f"{where}.{k}") for k, v in value.items()
        )
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if isinstance(value, hint):
            check_record(value, f"{where}.")
            return True
        return False
    return _scalar_matches(value, hint)


def _tuple_matches(value: tuple[Any, ...], args: tuple[Any, ...], where: str) -> bool:
    if len(args) == 2 and args[1] is Ellipsis:
        return all(_matches(item, args[0], where) for item in value)
    return len(value) == len(args) and all(_matches(v, a, where) for v, a in zip(value, args, strict=True))


def _scalar_matches(value: Any, hint: Any) -> bool:
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint in (str, bool):
        return isinstance(value, hint)
    return True  # a hint this checker does not know (none in the stored records today)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
