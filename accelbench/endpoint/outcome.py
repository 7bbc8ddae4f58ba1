"""The outcome of an endpoint cell: the head (status, settings) and ``EndpointBody``
(``accelbench.endpoint.body``), the audits and the ``generation`` section with the curve
(``accelbench.curve.EndpointFigures``: one ``CurvePoint`` per concurrency, in ladder order, a step
function: no figure between two points is implied).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from accelbench import audits
from accelbench.cellspec import CellSpec
from accelbench.curve import CurvePoint, EndpointFigures, QpsSearch
from accelbench.endpoint import audits as endpoint_audits
from accelbench.endpoint.accuracy import MIN_REPLY_SHARE, Accuracy
from accelbench.endpoint.body import EndpointBody
from accelbench.endpoint.facts import EndpointFacts
from accelbench.endpoint.figures import Bounds
from accelbench.endpoint.prompts import SALT_BITS, length_text
from accelbench.endpoint.records import RequestRecord
from accelbench.endpoint.repeat import repeat_verdict
from accelbench.endpoint.servers import prefix_cache
from accelbench.endpoint.settings import EndpointSettings
from accelbench.generation.models import LlmModel
from accelbench.head import Head, NoiseProbe
from accelbench.meters import noise
from accelbench.outcome import Outcome

EARLY_SHARE = 0.9
"""A reply shorter than this share of ``max_tokens`` by the client's count ended early (the slack: the
client's re-tokenizing of the text, a few percent)."""


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
    """What the cell measured: the curve, the curve's requests (the repeat audit's pairs among them), the
    reason the ladder stopped early ("" if it did not), its duration, the accuracy check and the noise
    guard's record."""

    curve: Sequence[CurvePoint]
    timed: Sequence[RequestRecord]
    stopped: str
    duration_s: float
    accuracy: Accuracy
    probe: NoiseProbe | None = None
    """The noise guard's record of the ladder (None: not watched)."""
    energy_note: str = ""
    """What the points' energy counts, or why they have none (``accelbench.endpoint.energy``)."""
    qps_search: QpsSearch | None = None
    """The max-QPS search under Poisson arrivals (None: not asked)."""
    searched: Sequence[RequestRecord] = ()
    """The search's requests (audited with the curve's; a failing probe does not make the cell invalid)."""


@dataclass(frozen=True, slots=True)
class Setup:
    """What an endpoint cell is measured with: its spec, the stack's facts, the model, the driver's
    settings, the prompts' length range (tokens) and the goodput bounds of its points."""

    spec: CellSpec
    stack: EndpointFacts
    model: LlmModel
    settings: EndpointSettings
    lengths: tuple[int, int]
    limits: Bounds


def outcome(setup: Setup, found: Found) -> Outcome:
    """The cell's outcome."""
    every = [*found.timed, *found.searched]
    verdicts = endpoint_audits.verdicts(every, setup.settings.max_tokens, found.accuracy)
    # none when the ladder stopped, or measured one point (it repeated nothing: accelbench.endpoint.repeat)
    judged = len(found.curve) > 1 and not found.stopped
    verdicts += (repeat_verdict(found.timed),) if judged else ()
    failures = [] if found.accuracy.passed else [accuracy_failure(found.accuracy)]
    invalid = invalid_reasons(found.curve, found.timed, found.stopped)
    probe = found.probe
    unstable = noise.unstable_reason(probe) if probe is not None else ""
    status, reason = audits.cell_status(verdicts, failures, invalid, unstable, noise.outside_reason(probe))
    warned = noise.guard_warnings(probe) if probe is not None else []
    stack = setup.stack
    head = Head(
        status,
        reason,
        effective_precision=stack.precision,
        noise=probe,
        versions=dict(stack.versions),
        settings=_settings(setup),
        warnings=(*warned, *length_warnings(found.timed, setup.settings.max_tokens)),
    )
    body = EndpointBody(curve=figures(setup, found), audit=audits.section(verdicts, salt_bits=SALT_BITS))
    return Outcome(head, body)


def length_warnings(records: Sequence[RequestRecord], max_tokens: int) -> list[str]:
    """A warning when ok replies ended before ``max_tokens`` (EOS on a server not told to ignore it:
    the curve's output length is then the model's, not the one asked; issue 44 item 6), with the
    output-length distribution."""
    ok = [r for r in records if r.ok]
    short = [r for r in ok if r.output_tokens < EARLY_SHARE * max_tokens]
    if not short:
        return []
    lengths = np.array([r.output_tokens for r in ok])
    p10, p50, p90 = (float(np.percentile(lengths, q)) for q in (10, 50, 90))
    return [
        f"{len(short)} of {len(ok)} replies ended before {EARLY_SHARE:.0%} of max_tokens {max_tokens} "
        f"(output tokens mean {lengths.mean():.1f}, p10/p50/p90 {p10:g}/{p50:g}/{p90:g}): the server "
        "was not made to ignore EOS, so the curve's reply length is the model's"
    ]


def accuracy_failure(accuracy: Accuracy) -> str:
    """Why the accuracy check failed: the mean, and the per-reply floor when that is what failed."""
    said = f"accuracy vs fp32 reference {accuracy.mean_share:.2f}"
    if accuracy.floor_failed:
        said += f" ({accuracy.below_floor} of {len(accuracy.shares)} replies below {MIN_REPLY_SHARE:g})"
    return said


def figures(setup: Setup, found: Found) -> EndpointFigures:
    """The ``generation`` section: the curve and the settings it was measured with."""
    best = max(found.curve, key=lambda p: p.output_tokens_per_s) if found.curve else None
    folders = setup.spec.folders
    return EndpointFigures(
        endpoint=setup.stack.name,
        model=setup.model.name,
        params=setup.model.params,
        api=setup.settings.api,
        curve=tuple(found.curve),
        max_output_tokens_per_s=best.output_tokens_per_s if best else 0.0,
        goodput_ttft_bound_s=setup.limits.ttft_s,
        goodput_tpot_bound_s=setup.limits.tpot_s,
        max_tokens=setup.settings.max_tokens,
        length_distribution=length_text(setup.lengths),
        requests_file=_relative(Path(folders.cell_dir) / "requests.jsonl", Path(folders.run_dir)),
        duration_s=found.duration_s,
        accuracy=found.accuracy.record(),
        energy_note=found.energy_note,
        qps_search=found.qps_search,
        prefix_cache=prefix_cache(setup.stack.server),
    )


def _settings(setup: Setup) -> dict[str, Any]:
    """The result's settings of an endpoint cell."""
    spec, stack, settings = setup.spec, setup.stack, setup.settings
    return {
        "threads": spec.threads,
        "seed": spec.seed,
        "concurrency": list(settings.ladder),
        "requests_per_point": settings.requests,
        "max_tokens": settings.max_tokens,
        "api_key_env": settings.api_key_env,
        "serve_url": settings.serve_url if stack.server == "url" else None,
        **({"arrivals": settings.arrivals} if settings.arrivals else {}),
    }


def _relative(path: Path, run_dir: Path) -> str:
    """``path`` against the run folder when it is inside it."""
    return str(path.relative_to(run_dir)) if path.is_relative_to(run_dir) else str(path)
