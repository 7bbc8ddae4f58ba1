"""The LoadGen driver's body of a cell's outcome (``accelbench.outcome``): its latency, LoadGen's verdict
and figures, the server search, the audits' section and the variant's record. Every field may be absent:
a document stored before schema 5 has no ``figures``, and a test builds the part it reads."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accelbench.audit_section import AuditSection
from accelbench.head import record_of
from accelbench.loadgen_figures import Figures, Latency, LoadgenVerdict
from accelbench.sections import ServerSearch, VariantInfo, plain


@dataclass(frozen=True, slots=True)
class LoadgenBody:
    """The LoadGen driver's part of a cell's outcome: its latency, LoadGen's verdict and figures, the
    server search, the audits' section and the variant's record."""

    latency: Latency | None = None
    loadgen: LoadgenVerdict | None = None
    figures: Figures | None = None
    """LoadGen's headline of the scenario (None in a document stored before schema 5)."""
    trial_p50_s: tuple[float, ...] = ()
    server_search: ServerSearch | None = None
    audit: AuditSection | None = None
    variant_info: VariantInfo | None = None

    def to_dict(self) -> dict[str, Any]:
        """The body's keys of the stored document."""
        return {
            "latency": _plain(self.latency),
            "loadgen": _plain(self.loadgen),
            "figures": _plain(self.figures),
            "trial_p50_s": list(self.trial_p50_s),
            "server_search": self.server_search.to_dict() if self.server_search else None,
            "audit": self.audit.to_dict() if self.audit is not None else None,
            "variant_info": self.variant_info.to_dict() if self.variant_info is not None else None,
        }

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> LoadgenBody:
        """The body of an outcome document (the head's keys are ignored)."""
        search, audit, info = (document.get(k) for k in ("server_search", "audit", "variant_info"))
        return cls(
            latency=record_of(Latency, document.get("latency")),
            loadgen=record_of(LoadgenVerdict, document.get("loadgen")),
            figures=record_of(Figures, document.get("figures")),
            trial_p50_s=tuple(document.get("trial_p50_s", ())),
            server_search=ServerSearch.from_dict(search) if search is not None else None,
            audit=AuditSection.from_dict(audit) if audit is not None else None,
            variant_info=VariantInfo.from_dict(info) if info is not None else None,
        )


def _plain(record: Latency | LoadgenVerdict | Figures | None) -> dict[str, Any] | None:
    return None if record is None else plain(dataclasses.asdict(record))
