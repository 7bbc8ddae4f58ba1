"""The upgrade path of stored result documents: a version-1 to -8 document as the current version.

``accelbench.stored.from_dict`` calls ``upgrade`` for an older ``schema_version`` (the history is in
``accelbench.results``' module text and ``docs/results-format.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ADDED_SECTIONS = (
    "energy",
    "device_memory",
    "variant_info",
    "audit",
    "training",
    "figures",
    "server_search",
    "generation",
)
"""The sections added since schema 1 (versions 2 to 6), in the order they were added, which is their order
in the stored document (``accelbench.stored.STORED_KEYS``); an older document gets those it lacks as null."""


def upgrade(doc: Mapping[str, Any], version: int) -> dict[str, Any]:
    """A version-1 to -8 document as ``version`` (the current one): missing sections null, status re-derived
    (versions 1-3; from version 4 the status already follows the audits), the driver's name told by the
    sections it holds (``driver``, kept from version 9)."""
    upgraded = dict(doc)
    for section in ADDED_SECTIONS:
        upgraded.setdefault(section, None)
    if upgraded.get("status") == "ok" and doc.get("schema_version") in (1, 2, 3):
        upgraded["status"], upgraded["reason"] = _legacy_status(upgraded)
    upgraded.setdefault("driver", _legacy_driver(upgraded))
    upgraded["schema_version"] = version
    return upgraded


LOADGEN_SECTIONS = ("latency", "loadgen", "figures", "audit", "variant_info", "server_search")
"""The sections a LoadGen cell wrote before schema 9 (with its trials' medians)."""


def _legacy_driver(doc: Mapping[str, Any]) -> str:
    """The driver that measured a cell stored before its name was (schema 1-8), told by its sections: the
    ``generation`` section's kind (a sessions ladder, an endpoint's curve, else decode figures), then a
    ``training`` section, then any other (LoadGen's latency, verdict or figures, the audits, the variant's
    record, the server search): ``loadgen``, the one driver that wrote them; "" when it holds none."""
    generation = doc.get("generation")
    if isinstance(generation, Mapping):
        if "sessions_ladder" in generation:
            return "sessions"
        return "endpoint" if "curve" in generation else "tokens"
    if doc.get("training") is not None:
        return "train-to-quality"
    held = [doc.get(name) for name in (*LOADGEN_SECTIONS, "trial_p50_s")]
    return "loadgen" if any(value not in (None, []) for value in held) else ""


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
