"""The upgrade path of stored result documents: a version-1 to -6 document as the current version.

``accelbench.results.from_dict`` calls ``upgrade`` for an older ``schema_version`` (the history is in
``accelbench.results``' module text and ``docs/results-format.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def upgrade(doc: Mapping[str, Any], version: int) -> dict[str, Any]:
    """A version-1 to -7 document as ``version`` (the current one): missing sections null, status re-derived
    (versions 1-3; from version 4 the status already follows the audits)."""
    upgraded = dict(doc)
    sections = (
        "energy",
        "device_memory",
        "variant_info",
        "audit",
        "training",
        "figures",
        "server_search",
        "generation",
    )
    for section in sections:
        upgraded.setdefault(section, None)
    if upgraded.get("status") == "ok" and doc.get("schema_version") not in (4, 5, 6, 7):
        upgraded["status"], upgraded["reason"] = _legacy_status(upgraded)
    upgraded["schema_version"] = version
    return upgraded


def _legacy_status(doc: Mapping[str, Any]) -> tuple[str, str]:
    """The status an ``ok`` document of schema 1-3 gets under version 4's rules, with the reason."""
    audit = doc.get("audit") or {}
    flagged = sorted(
        name for name, entry in audit.items() if isinstance(entry, Mapping) and entry.get("flagged")
    )
    if flagged:
        return "disqualified", f"{', '.join(flagged)} audit flagged this result (stored under schema 3)"
    loadgen = doc.get("loadgen") or {}
    if loadgen and not loadgen.get("valid", True):
        reasons = "; ".join(loadgen.get("invalid_reasons") or ()) or "no reason given"
        return "invalid", f"LoadGen INVALID: {reasons}"
    noise = doc.get("noise") or {}
    if noise.get("unstable"):
        return (
            "unstable",
            f"unstable: reference probe drifted {noise.get('drift', 0.0):.0%} during the measurement",
        )
    return "ok", doc.get("reason", "")
