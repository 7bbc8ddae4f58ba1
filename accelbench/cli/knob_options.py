"""``accelbench run``'s options for the drivers' knobs, generated from their declarations.

Each knob is declared once, on its driver's settings record (``accelbench.knobs.knob``: flag, help,
parse, check); typer builds a command's options from its signature, so ``with_knob_options`` gives the
``run`` command one keyword parameter per declared knob (``Annotated[... | None, typer.Option(flag,
help=...)] = None``) and ``parsed`` turns what the user typed into run settings by name.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Annotated, Any, get_type_hints

import typer

from accelbench import settings
from accelbench.knobs import Declared

_SCALARS: Mapping[str, type] = {"int": int, "float": float, "str": str}
"""The field types typer parses itself; any other knob declares its ``parse`` (its option is text)."""


def option_type(declared: Declared) -> Any:
    """The annotation of ``declared``'s option: its scalar type, or text for its ``parse``, or None when
    not given (the run's value, else the knob's default, stays)."""
    base = declared.annotation.removesuffix(" | None")
    if declared.knob.parse is None and base not in _SCALARS:
        raise TypeError(f"the knob {declared.name} ({declared.annotation}) needs a parse for its option")
    kind = str if declared.knob.parse is not None else _SCALARS[base]
    return Annotated[kind | None, typer.Option(declared.knob.flag, help=declared.knob.help)]


def with_knob_options(command: Callable[..., None], after: str) -> Callable[..., None]:
    """``command`` (which takes the knobs as ``**knobs``) with one option per declared knob inserted in
    its signature after its parameter ``after``: the function typer registers."""

    @functools.wraps(command)
    def with_knobs(**given: Any) -> None:
        command(**given)

    own = inspect.signature(command, eval_str=True)
    fixed = [p for p in own.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    hints = {k: v for k, v in get_type_hints(command, include_extras=True).items() if k != "knobs"}
    declared = settings.declared_knobs().items()
    options = {name: option_type(knob) for name, knob in declared if knob.knob.flag}  # flagless: TOML only
    added = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)
        for name, annotation in options.items()
    ]
    cut = next(i for i, p in enumerate(fixed) if p.name == after) + 1
    parameters = [
        *fixed[:cut],
        *added,
        *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in fixed[cut:]),
    ]
    with_knobs.__signature__ = own.replace(parameters=parameters)  # type: ignore[attr-defined]
    with_knobs.__annotations__ = {**hints, **options}
    return with_knobs


def parsed(given: Mapping[str, Any]) -> dict[str, Any]:
    """The knob options' values as run settings by name: text through the knob's ``parse``; None (not
    given) stays None, so the run's or the TOML file's value holds."""
    declared = settings.declared_knobs()
    return {name: _parsed(declared[name], value) for name, value in given.items()}


def _parsed(declared: Declared, value: Any) -> Any:
    parse = declared.knob.parse
    return value if value is None or parse is None else parse(value)
