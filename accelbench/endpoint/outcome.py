"""The outcome document of an endpoint cell: status, audits, settings, and the ``generation`` section
with the curve (``curve``: one ``CurvePoint.to_dict`` per concurrency, in ladder order, a step function:
no figure between two points is implied).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelbench import audits
from accelbench.cellspec import CellSpec
from accelbench.endpoint import audits as endpoint_audits
from accelbench.endpoint.accuracy import Accuracy
from accelbench.endpoint.figures import Bounds
from accelbench.endpoint.prompts import SALT_BITS, length_text
from accelbench.endpoint.records import CurvePoint, RequestRecord
from accelbench.endpoint.repeat import repeat_verdict
from accelbench.endpoint.stack import EndpointStack
from accelbench.generation.models import LlmModel


def invalid_reasons(curve: Sequence[CurvePoint], records: Sequence[RequestRecord], stopped: str) -> list[str]:
    """A point with failed requests (with the first error) or a ladder cut short makes the cell invalid."""
    reasons = []
    for point in curve:
        if point.error_rate > 0:
            failed = [r for r in records if r.concurrency == point.concurrency and not r.ok]
            first = failed[0]
            reasons.append(
                f"concurrency {point.concurrency}: {len(failed)} of {point.requests} requests failed "
                f"({first.status}: {first.error})"
            )
    return reasons + ([f"ladder stopped: {stopped}"] if stopped else [])


@dataclass(frozen=True, slots=True)
class Found:
    """What the cell measured: the curve, the curve's and the repeat audit's requests, the reason the
    ladder stopped early ("" if it did not), its duration, and the accuracy check."""

    curve: Sequence[CurvePoint]
    timed: Sequence[RequestRecord]
    audited: Sequence[RequestRecord]
    stopped: str
    duration_s: float
    accuracy: Accuracy


def outcome(
    spec: CellSpec, stack: EndpointStack, model: LlmModel, settings: Any, found: Found, limits: Bounds
) -> dict[str, Any]:
    """The cell's outcome document."""
    curve, timed, audited = found.curve, found.timed, found.audited
    verdicts = endpoint_audits.verdicts([*timed, *audited], settings.max_tokens, found.accuracy)
    verdicts += (repeat_verdict(audited),) if audited else ()  # none: the ladder stopped (invalid)
    failures = (
        [] if found.accuracy.passed else [f"accuracy vs fp32 reference {found.accuracy.mean_share:.2f}"]
    )
    invalid = invalid_reasons(curve, timed, found.stopped)
    status, reason = audits.cell_status(verdicts, failures, invalid, "")
    best = max(curve, key=lambda p: p.output_tokens_per_s) if curve else None
    generation = {
        "endpoint": stack.name,
        "model": model.name,
        "params": model.params,
        "api": settings.api,
        "curve": [p.to_dict() for p in curve],
        "max_output_tokens_per_s": best.output_tokens_per_s if best else 0.0,
        "goodput_ttft_bound_s": limits.ttft_s,
        "goodput_tpot_bound_s": limits.tpot_s,
        "max_tokens": settings.max_tokens,
        "length_distribution": length_text(settings.lengths),
        "requests_file": _relative(Path(spec.cell_dir) / "requests.jsonl", Path(spec.run_dir)),
        "duration_s": found.duration_s,
        "accuracy": found.accuracy.to_dict(),
    }
    return {
        "status": status,
        "reason": reason,
        "effective_precision": stack.precision,
        "versions": stack.versions(),
        "settings": {
            "threads": spec.threads,
            "seed": spec.seed,
            "concurrency": list(settings.ladder),
            "requests_per_point": settings.requests,
            "max_tokens": settings.max_tokens,
            "api_key_env": settings.api_key_env,
            "serve_url": spec.serve_url if stack.server == "url" else None,
        },
        "audit": audits.section(verdicts, salt_bits=SALT_BITS),
        "generation": generation,
        "warnings": [],
    }


def _relative(path: Path, run_dir: Path) -> str:
    """``path`` against the run folder when it is inside it."""
    return str(path.relative_to(run_dir)) if path.is_relative_to(run_dir) else str(path)
