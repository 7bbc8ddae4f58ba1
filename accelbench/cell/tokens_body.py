"""The token driver's body of a cell's outcome (``accelbench.outcome``): what LoadGen said, the figures,
the server search, the audits and the generation section; and, in a document stored before schema 9,
LoadGen's latency summary and the variant's record beside them (read and written back as they were)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accelbench.audit_section import AuditSection
from accelbench.head import record_of
from accelbench.loadgen_figures import Figures, Latency, LoadgenVerdict
from accelbench.sections import GenerationFigures, ServerSearch, VariantInfo, plain


@dataclass(frozen=True, slots=True)
class TokensBody:
    """The token driver's part of a cell's outcome: LoadGen's verdict and figures of the scored run, the
    server search, the audits' section and the ``generation`` section (``accelbench.generation.figures``)."""

    loadgen: LoadgenVerdict
    figures: Figures
    decode: GenerationFigures
    """The ``generation`` section (``Result.decode``)."""
    server_search: ServerSearch | None = None
    audit: AuditSection | None = None
    latency: Latency | None = None
    trial_p50_s: tuple[float, ...] = ()
    variant_info: VariantInfo | None = None

    def to_dict(self) -> dict[str, Any]:
        """The body's keys of the stored document."""
        return {
            "loadgen": plain(dataclasses.asdict(self.loadgen)),
            "figures": plain(dataclasses.asdict(self.figures)),
            "server_search": self.server_search.to_dict() if self.server_search is not None else None,
            "audit": self.audit.to_dict() if self.audit is not None else None,
            "generation": self.decode.to_dict(),
            "latency": plain(dataclasses.asdict(self.latency)) if self.latency is not None else None,
            "trial_p50_s": list(self.trial_p50_s),
            "variant_info": self.variant_info.to_dict() if self.variant_info is not None else None,
        }

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> TokensBody:
        """The body of an outcome document (the head's keys are ignored)."""
        search, audit, info = (document.get(k) for k in ("server_search", "audit", "variant_info"))
        return cls(
            loadgen=record_of(LoadgenVerdict, document["loadgen"]),
            figures=record_of(Figures, document["figures"]),
            decode=GenerationFigures.from_dict(document["generation"]),
            server_search=ServerSearch.from_dict(search) if search is not None else None,
            audit=AuditSection.from_dict(audit) if audit is not None else None,
            latency=record_of(Latency, document.get("latency")),
            trial_p50_s=tuple(document.get("trial_p50_s", ())),
            variant_info=VariantInfo.from_dict(info) if info is not None else None,
        )
