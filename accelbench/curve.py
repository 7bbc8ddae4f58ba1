"""The stored figures of an endpoint cell (issue 31): its curve and the settings it was measured with.

An endpoint cell (``accelbench.endpoint``) stores its section under the result's ``generation`` key, as
the LLM decode cells do (``accelbench.sections.GenerationFigures``), with the curve at
``generation.curve``: one ``CurvePoint`` per concurrency, in ladder order, a step function (no figure
between two points is implied). ``EndpointFigures.from_dict`` reads every stored form of that section
(results schema 7; those stored before the accuracy check lack ``accuracy``); the result's ``driver``
(``endpoint``) says the section is this record (``accelbench.endpoint.body``). With ``--arrivals poisson
the section also holds ``qps_search`` (``QpsSearch``: the max QPS under Poisson arrivals and its probes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accelbench.served_accuracy import EndpointAccuracy, put_accuracy, read_accuracy


def _known(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``data`` that name a field of the dataclass ``cls`` (a newer writer's keys are left
    out)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def half_width(median: float, low: float, high: float) -> float | None:
    """Half the interval ``[low, high]`` over ``median`` (None: no interval stored, or a zero median)."""
    if high <= 0 or median <= 0:
        return None
    return (high - low) / 2 / median


INTERVAL_FIELDS = ("ttft_p50_low_s", "ttft_p50_high_s", "tpot_p50_low_s", "tpot_p50_high_s")
"""A point's median intervals: left out of the stored form when not measured (records stored before)."""


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """The figures of one fixed-concurrency point (seconds, tokens, per second)."""

    concurrency: int
    requests: int
    output_tokens_per_s: float
    """System output tokens per second: every ok reply's client-counted tokens over the point's span."""
    tokens_per_s_per_user: float
    """1 / p90 TPOT (0 when no reply has two tokens)."""
    ttft_p50_s: float
    ttft_p90_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p90_s: float
    tpot_p99_s: float
    itl_p50_s: float
    itl_p90_s: float
    itl_p99_s: float
    e2e_p50_s: float
    e2e_p90_s: float
    e2e_p99_s: float
    requests_per_s: float
    goodput_requests_per_s: float
    """Ok replies within the TTFT and TPOT bounds, per second."""
    error_rate: float
    output_tokens: int = 0
    duration_s: float = 0.0
    filler_first_chunks: int = 0
    usage_disagreements: int = 0
    """Replies whose server ``usage`` differs from the client's count by more than an EOS token."""
    input_tokens: int = 0
    """The point's prompts' tokens (the chat template's text, client-counted); 0 in records stored
    before it was kept."""
    energy_j: float | None = None
    """What the point's window consumed (``accelbench.endpoint.energy``); None: not measured (a remote
    server, no meter, or a record stored before)."""
    energy_provenance: str = ""
    """``measured`` or ``estimated`` (empty without energy)."""
    ttft_p50_low_s: float = 0.0
    """The TTFT median's 95% confidence interval, distribution-free (order statistics of the point's
    replies: ``accelbench.endpoint.figures.median_interval``); 0.0 and 0.0: fewer than
    ``MEDIAN_INTERVAL_MIN`` replies, or a record stored before it was kept."""
    ttft_p50_high_s: float = 0.0
    tpot_p50_low_s: float = 0.0
    """The TPOT median's 95% confidence interval, as the TTFT one's."""
    tpot_p50_high_s: float = 0.0

    @property
    def ttft_p50_half_width(self) -> float | None:
        """Half the TTFT median's interval over the median (None: no interval)."""
        return half_width(self.ttft_p50_s, self.ttft_p50_low_s, self.ttft_p50_high_s)

    @property
    def tpot_p50_half_width(self) -> float | None:
        """Half the TPOT median's interval over the median (None: no interval)."""
        return half_width(self.tpot_p50_s, self.tpot_p50_low_s, self.tpot_p50_high_s)

    @property
    def joules_per_output_token(self) -> float | None:
        """The point's energy over its ok replies' output tokens (None: no energy or no token)."""
        if self.energy_j is None or self.output_tokens <= 0:
            return None
        return self.energy_j / self.output_tokens

    @property
    def joules_per_token(self) -> float | None:
        """The point's energy over its prompt and output tokens (None: no energy or no token)."""
        tokens = self.output_tokens + self.input_tokens
        return self.energy_j / tokens if self.energy_j is not None and tokens > 0 else None

    def to_dict(self) -> dict[str, Any]:
        """The stored form (one entry of the section's ``curve``; the keys added since results schema 7
        was first written are left out where they hold nothing, as in the records stored before)."""
        document = dataclasses.asdict(self)
        if self.energy_j is None:
            del document["energy_j"], document["energy_provenance"]
        if not self.input_tokens:
            del document["input_tokens"]
        for name in INTERVAL_FIELDS:
            if not document[name]:
                del document[name]
        return document

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CurvePoint:
        """Inverse of ``to_dict`` (unknown keys ignored)."""
        return cls(**_known(cls, data))


@dataclass(frozen=True, slots=True)
class QpsProbe:
    """One probe of the max-QPS search (``accelbench.endpoint.qps_search``): Poisson arrivals at
    ``target_qps`` and what they measured (TTFT from each request's scheduled arrival)."""

    target_qps: float
    requests: int
    requests_per_s: float
    """Achieved: ok replies over the probe's span (first arrival to last end)."""
    output_tokens_per_s: float
    ttft_p50_s: float
    ttft_p90_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p90_s: float
    tpot_p99_s: float
    goodput_requests_per_s: float
    """Ok replies within both bounds, per second of the span."""
    error_rate: float
    passed: bool
    """p99 TTFT and p99 TPOT within the bounds and no request failed."""
    reason: str
    """Why it failed (empty when it passed)."""

    def to_dict(self) -> dict[str, Any]:
        """The stored form (one entry of ``qps_search.probes``)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QpsProbe:
        """Inverse of ``to_dict`` (unknown keys ignored)."""
        return cls(**_known(cls, data))


@dataclass(frozen=True, slots=True)
class QpsSearch:
    """The max-QPS search of an endpoint cell: its bounds, probes (in the order they ran), the highest
    target that passed and why the search ended."""

    ttft_bound_s: float
    tpot_bound_s: float
    max_qps: float
    """The highest passing probe's target (0: no probe passed)."""
    goodput_requests_per_s: float
    """The goodput of the probe at ``max_qps`` (0 when none passed)."""
    probes: tuple[QpsProbe, ...]
    resolution: float
    """The search stops once the lowest failing target is within this share above ``max_qps``."""
    budget: int
    """The most probes it may run."""
    ended: str
    """Why it ended: bracketed, the budget spent, the server failing every request, or no start."""

    def to_dict(self) -> dict[str, Any]:
        """The stored ``qps_search`` of the ``generation`` section."""
        document = dataclasses.asdict(self)
        document["probes"] = [p.to_dict() for p in self.probes]
        return document

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QpsSearch:
        """Inverse of ``to_dict``."""
        values = dict(data)
        values["probes"] = tuple(QpsProbe.from_dict(p) for p in values["probes"])
        return cls(**values)


@dataclass(frozen=True, slots=True)
class EndpointFigures:
    """The ``generation`` section of an endpoint cell: the curve and the endpoint settings."""

    endpoint: str
    """The endpoint stack (``llm@url``, ``llm@transformers``, ...)."""
    model: str
    params: int
    api: str
    """The OpenAI API the requests used (``chat``)."""
    curve: tuple[CurvePoint, ...]
    max_output_tokens_per_s: float
    """The best point's system output tokens/s (0 with no point)."""
    goodput_ttft_bound_s: float
    goodput_tpot_bound_s: float
    max_tokens: int
    length_distribution: str
    requests_file: str
    """``requests.jsonl``: relative to the run folder when inside it."""
    duration_s: float
    accuracy: EndpointAccuracy | None = None
    """The accuracy check (None: stored before the check existed; the key is absent then)."""
    energy_note: str = ""
    """What the points' energy counts (the meter, and the estimate's formula for the last point), or why
    the points have none (empty, and absent, in records stored before)."""
    qps_search: QpsSearch | None = None
    """The max-QPS search under Poisson arrivals (``--arrivals poisson``; None, and absent: not run)."""
    prefix_cache: str = ""
    """The server's prefix cache as its kind declares it (``accelbench.endpoint.servers.prefix_cache``):
    a cache-on curve is never set beside a cache-off one unlabelled ("", and absent: stored before)."""

    def to_dict(self) -> dict[str, Any]:
        """The stored ``generation`` section."""
        document = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        document["curve"] = [p.to_dict() for p in self.curve]
        if not self.prefix_cache:
            del document["prefix_cache"]
        if not self.energy_note:
            del document["energy_note"]
        put_accuracy(document, self.accuracy)
        if self.qps_search is None:
            del document["qps_search"]
        else:
            document["qps_search"] = self.qps_search.to_dict()
        return document

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> EndpointFigures:
        """A stored endpoint ``generation`` section."""
        values = dict(document)
        values["curve"] = tuple(CurvePoint.from_dict(p) for p in values["curve"])
        values["accuracy"] = read_accuracy(values)
        searched = values.get("qps_search")
        values["qps_search"] = None if searched is None else QpsSearch.from_dict(searched)
        return cls(**values)
