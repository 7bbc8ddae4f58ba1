"""A result's stored (JSON) document: flat (``STORED_KEYS``), the head's keys beside the run facts and the
body's sections, in the order of every schema since 1 (so stored documents do not change); ``from_dict``
reads one back typed, the body by its driver's record (``accelbench.outcome.body_of``, ``registry.BODIES``),
upgrading a document of an older schema (``accelbench.result_upgrade``; the history:
``accelbench.results``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from accelbench.head import Head
from accelbench.outcome import body_of
from accelbench.result_upgrade import ADDED_SECTIONS, upgrade
from accelbench.results import RUN_FACTS, SCHEMA_VERSION, Cell, Result

STORED_KEYS = (
    "run_id",
    "cell",
    "status",
    "reason",
    "latency",
    "loadgen",
    "trial_p50_s",
    "quality",
    "sanity",
    "effective_precision",
    "compile_s",
    "peak_rss_bytes",
    "noise",
    "warnings",
    "versions",
    "settings",
    "machine_fingerprint",
    "started_at",
    "wall_s",
    "stderr_tail",
    *ADDED_SECTIONS,
    "driver",
    "schema_version",
)
"""The keys of the stored document in their order: flat, the head's among the run facts and the body's
sections (the order of every schema since 1, kept so stored documents do not change)."""


def to_dict(result: Result) -> dict[str, Any]:
    """The stored JSON document of a result: every key of ``STORED_KEYS``, null (``trial_p50_s``: empty)
    where neither the head, the body nor the run facts hold it. ValueError on a result that could not
    be read back (a body without its driver's name, a key no result stores)."""
    flat: dict[str, Any] = {key: None for key in STORED_KEYS} | {"trial_p50_s": []}
    flat |= {name: getattr(result, name) for name in RUN_FACTS}
    flat["cell"] = dataclasses.asdict(result.cell)
    flat |= result.head.to_dict()
    if result.body is not None:
        if not result.driver:  # it could not be read back: the driver's name says which body reads it
            kind = type(result.body).__name__
            raise ValueError(f"result {result.cell.key} holds a {kind} and names no driver")
        flat |= result.body.to_dict()
    unknown = set(flat) - set(STORED_KEYS)
    if unknown:
        raise ValueError(
            f"a {result.driver!r} body writes keys no result stores: {', '.join(sorted(unknown))}"
        )
    return {key: flat[key] for key in STORED_KEYS}


def from_dict(doc: Mapping[str, Any]) -> Result:
    """Rebuild a result from its stored document (versions 1-8 are upgraded); ValueError on an unknown
    schema, on keys no schema stores, and on sections of a driver that writes none."""
    version = doc.get("schema_version")
    if version in (1, 2, 3, 4, 5, 6, 7, 8):
        doc = upgrade(doc, SCHEMA_VERSION)
    elif version != SCHEMA_VERSION:
        raise ValueError(f"result schema_version {version!r} is not {SCHEMA_VERSION} (or 1-8, upgraded)")
    unknown = set(doc) - set(STORED_KEYS)
    if unknown:
        raise ValueError(f"a stored result with keys no schema stores: {', '.join(sorted(unknown))}")
    facts = {name: doc[name] for name in RUN_FACTS if name in doc}
    facts["cell"] = Cell(**doc["cell"])
    driver = str(doc.get("driver", ""))
    return Result(head=Head.from_dict(doc), body=body_of(driver, doc), **facts)
