"""The one place the bundle package loads a stored result document: ``stored(doc)`` -> a typed ``Result``.

``stored`` loads the document as a result (``accelbench.stored.from_dict``: schema, upgrade of older
documents) and checks every field holds its declared type (``accelbench.record_types.check_record``), once,
at the edge: ``verify``, ``compare`` and ``publish`` then read the result's attributes. Nothing in it is
trusted: these are the claims that ``accelbench.bundle.rederive`` recomputes from the raw logs and
``accelbench.bundle.rejudge`` from the audit evidence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from accelbench.curve import CurvePoint
from accelbench.errors import UserError
from accelbench.record_types import check_record
from accelbench.results import Result
from accelbench.stored import from_dict


def stored(doc: Mapping[str, Any], where: str) -> Result:
    """The result ``doc`` holds; UserError naming ``where`` when it does not load as a result or a field
    holds another type than its record declares."""
    try:
        result = from_dict(doc)
        check_record(result)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise UserError(f"{where} is not a result document: {exc}") from None
    return result


def claimed_rules(result: Result) -> str:
    """The rule set a result claims: its settings' (``settings.rules``), else LoadGen's verdict's."""
    return result.rules_setting or (result.loadgen.rules if result.loadgen is not None else "")


def served_curve(result: Result) -> tuple[CurvePoint, ...]:
    """A served LLM's curve points (issue 31), when the result has them; empty otherwise."""
    return result.curve.curve if result.curve is not None else ()


def headline(result: Result) -> dict[str, Any] | None:
    """LoadGen's headline of a cell as stored: ``metric``, ``value`` and ``ci``; None when unmeasured."""
    if result.figures is None:
        return None
    return {"metric": result.figures.metric, "value": result.figures.value, "ci": result.figures.ci}
