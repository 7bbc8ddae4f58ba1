"""The one place the bundle package reaches into a stored result document (issue 30 may reshape it).

``stored(doc)`` checks the document loads as a result (``accelbench.results.from_dict``: schema, types)
and picks the parts ``verify`` and ``compare`` read, as plain JSON values. Nothing here is trusted: these are
the claims that ``accelbench.bundle.rederive`` recomputes from the raw logs and the audit evidence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accelbench.errors import UserError
from accelbench.results import from_dict, to_dict


@dataclass(frozen=True, slots=True)
class Stored:
    """The claims of one stored result document."""

    key: str
    workload: str
    size: str
    stack: str
    scenario: str
    device: str
    status: str
    reason: str
    figures: Mapping[str, Any] | None
    server_search: Mapping[str, Any] | None
    loadgen: Mapping[str, Any] | None
    audit: Mapping[str, Any] | None
    quality: Mapping[str, Any] | None
    sanity: Mapping[str, Any] | None
    noise: Mapping[str, Any] | None
    effective_precision: str
    rules: str
    threads: int | None
    batch_size: int | None
    machine_fingerprint: str
    curve: tuple[Mapping[str, Any], ...]
    """An LLM endpoint cell's ``generation.curve`` points (issue 31), when the document has them."""


def stored(doc: Mapping[str, Any], where: str) -> Stored:
    """The claims of ``doc``; UserError naming ``where`` when it does not load as a result."""
    try:
        result = from_dict(doc)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise UserError(f"{where} is not a result document: {exc}") from None
    plain = to_dict(result)
    settings = plain.get("settings") or {}
    cell = plain["cell"]
    return Stored(
        key=result.cell.key,
        workload=cell["workload"],
        size=str(cell.get("size") or ""),
        stack=cell["stack"],
        scenario=cell["scenario"],
        device=cell["device"],
        status=result.status,
        reason=result.reason,
        figures=plain.get("figures"),
        server_search=plain.get("server_search"),
        loadgen=plain.get("loadgen"),
        audit=plain.get("audit"),
        quality=plain.get("quality"),
        sanity=plain.get("sanity"),
        noise=plain.get("noise"),
        effective_precision=str(plain.get("effective_precision") or ""),
        rules=str(settings.get("rules") or (plain.get("loadgen") or {}).get("rules") or ""),
        threads=settings.get("threads") if isinstance(settings.get("threads"), int) else None,
        batch_size=settings.get("batch_size") if isinstance(settings.get("batch_size"), int) else None,
        machine_fingerprint=str(plain.get("machine_fingerprint") or ""),
        curve=tuple((plain.get("generation") or {}).get("curve") or ()),
    )


def headline(claims: Stored) -> dict[str, Any] | None:
    """LoadGen's headline of a cell as stored: ``metric``, ``value`` and ``ci``; None when unmeasured."""
    if claims.figures is None:
        return None
    return {k: claims.figures.get(k) for k in ("metric", "value", "ci")}


def cell_key(doc: Mapping[str, Any]) -> str:
    """The cell key of a stored document (before it is checked)."""
    cell = doc.get("cell") or {}
    parts = ("workload", "size", "variant", "stack", "device", "scenario")
    return "/".join(str(cell.get(p, "")) for p in parts)
