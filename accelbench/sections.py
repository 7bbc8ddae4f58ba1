"""Typed sections of a result: the server QPS search, the variant's record and the training figures.

Each record is written by one module (``accelbench.scenarios.server_search`` and the token driver,
``accelbench.variants``, ``accelbench.training.measure``) and read by the report and normalize layers by
attribute. ``to_dict`` writes the stored keys (results schema 3 and 5); ``from_dict`` reads every stored
form, older ones included: a key a version did not write loads as None (or empty).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_TOKEN_KEYS = ("ttft_p99_s", "tpot_p99_s")


def plain(value: Any) -> Any:
    """``value`` with mappings as dicts and tuples as lists, as JSON stores it (the one helper for it)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class SearchProbe:
    """One LoadGen server run of the search at a target QPS (a token cell's also has p99 TTFT and TPOT)."""

    target_qps: float
    valid: bool
    p99_s: float
    completed_qps: float
    reasons: tuple[str, ...] = ()
    ttft_p99_s: float | None = None
    tpot_p99_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The stored probe (the token keys only on a token cell's probe)."""
        document = plain(dataclasses.asdict(self))
        for key in _TOKEN_KEYS:
            if document[key] is None:
                del document[key]
        return dict(document)

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> SearchProbe:
        """A stored probe."""
        return cls(
            target_qps=float(document["target_qps"]),
            valid=bool(document["valid"]),
            p99_s=float(document.get("p99_s") or 0.0),
            completed_qps=float(document.get("completed_qps") or 0.0),
            reasons=tuple(document.get("reasons") or ()),
            ttft_p99_s=document.get("ttft_p99_s"),
            tpot_p99_s=document.get("tpot_p99_s"),
        )


@dataclass(frozen=True, slots=True)
class ServerSearch:
    """The stored server QPS search: its probes in order, the scored target and what brackets it."""

    bound_s: float
    max_qps: float
    bracket: tuple[float, float | None]
    """(the scored target, the lowest INVALID target above it; None: no such target)."""
    resolution: float
    probes: tuple[SearchProbe, ...]
    backoff: float | None = None
    scored_failures: tuple[SearchProbe, ...] = ()
    """Scored runs INVALID at the target the search gave them: every trial ran again lower."""

    def to_dict(self) -> dict[str, Any]:
        """The stored ``server_search`` section."""
        return {
            "bound_s": self.bound_s,
            "max_qps": self.max_qps,
            "bracket": list(self.bracket),
            "resolution": self.resolution,
            "probes": [p.to_dict() for p in self.probes],
            "backoff": self.backoff,
            "scored_failures": [p.to_dict() for p in self.scored_failures],
        }

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> ServerSearch:
        """A stored ``server_search`` section."""
        low, high = (*(document.get("bracket") or ()), 0.0, None)[:2]
        return cls(
            bound_s=float(document.get("bound_s") or 0.0),
            max_qps=float(document.get("max_qps") or 0.0),
            bracket=(float(low or 0.0), None if high is None else float(high)),
            resolution=float(document.get("resolution") or 0.0),
            probes=tuple(SearchProbe.from_dict(p) for p in document.get("probes") or ()),
            backoff=document.get("backoff"),
            scored_failures=tuple(SearchProbe.from_dict(p) for p in document.get("scored_failures") or ()),
        )


@dataclass(frozen=True, slots=True)
class VariantMutation:
    """One seeded change of a variant."""

    kind: str
    detail: str


@dataclass(frozen=True, slots=True)
class VariantInfo:
    """A variant cell's record: its draw, its mutations and FLOPs (``accelbench.variants.variant_info``).

    Documents stored before the draw was kept hold ``seed`` (the variant seed) and no canonical FLOPs."""

    mutations: tuple[VariantMutation, ...]
    flops: float | None
    flops_ratio: float | None
    variant_seed: int | None = None
    index: int | None = None
    changes: Mapping[str, Any] = field(default_factory=dict)
    canonical_flops: float | None = None
    draws: int | None = None
    seed: int | None = None
    """The variant seed under its old key (older documents); None in new ones."""

    @property
    def drawn_seed(self) -> int | None:
        """The variant seed, under whichever key it was stored."""
        return self.variant_seed if self.variant_seed is not None else self.seed

    def to_dict(self) -> dict[str, Any]:
        """The stored ``variant_info`` section (the keys its version wrote)."""
        document = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        document["mutations"] = [dataclasses.asdict(m) for m in self.mutations]
        document["changes"] = plain(self.changes)
        if self.seed is None:
            del document["seed"]
        else:  # an older document: only the keys it had
            document = {k: document[k] for k in ("seed", "mutations", "flops", "flops_ratio")}
        return document

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> VariantInfo:
        """A stored ``variant_info`` section."""
        mutations = tuple(VariantMutation(str(m["kind"]), str(m["detail"])) for m in document["mutations"])
        return cls(
            mutations=mutations,
            flops=document.get("flops"),
            flops_ratio=document.get("flops_ratio"),
            variant_seed=document.get("variant_seed"),
            index=document.get("index"),
            changes=dict(document.get("changes") or {}),
            canonical_flops=document.get("canonical_flops"),
            draws=document.get("draws"),
            seed=document.get("seed"),
        )


@dataclass(frozen=True, slots=True)
class TrainingRun:
    """One timed run to quality of a ``train-to-quality`` cell."""

    seed: int
    time_to_quality_s: float
    converged: bool
    quality: float
    epochs: int
    samples: int
    energy_j: float | None = None
    log_file: str = ""


@dataclass(frozen=True, slots=True)
class TrainingBaseline:
    """The same cell's runs with one process (kept when ``nproc`` > 1: the scaling efficiency's base)."""

    olympic_mean_s: float | None
    runs_converged: int
    samples_per_s_per_process: float
    time_to_quality_s: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class TrainingFigures:
    """The ``training`` section of a ``train-to-quality`` result (``accelbench.training.measure``)."""

    runs: tuple[TrainingRun, ...] = ()
    olympic_mean_s: float | None = None
    runs_converged: int = 0
    target: float = 0.0
    quality_metric: str = ""
    quality_reached: float = 0.0
    nproc: int = 1
    samples_per_s_per_process: float | None = None
    scaling_efficiency: float | None = None
    scaling_basis: str = ""
    time_to_quality_speedup: float | None = None
    energy_j: float | None = None
    baseline_nproc1: TrainingBaseline | None = None
    mllog_dir: str = ""
    timing: str = ""
    rules: str = ""
    rules_summary: str = ""
    precision: Mapping[str, Any] | None = None
    """The precision the stack declared, as torch had it (``accelbench.training.precision``)."""

    def to_dict(self) -> dict[str, Any]:
        """The stored ``training`` section."""
        document = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        document["runs"] = [dataclasses.asdict(r) for r in self.runs]
        document["baseline_nproc1"] = (
            plain(dataclasses.asdict(self.baseline_nproc1)) if self.baseline_nproc1 else None
        )
        document["precision"] = plain(self.precision) if self.precision is not None else None
        return document

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> TrainingFigures:
        """A stored ``training`` section (older ones lack the rules, precision and log keys)."""
        fields = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in document.items() if k in fields}
        values["runs"] = tuple(TrainingRun(**r) for r in document.get("runs") or ())
        base = document.get("baseline_nproc1")
        if base is not None:
            values["baseline_nproc1"] = TrainingBaseline(
                **{**base, "time_to_quality_s": tuple(base["time_to_quality_s"])}
            )
        return cls(**values)


@dataclass(frozen=True, slots=True)
class TokenBounds:
    """The p99 TTFT and TPOT bounds of an LLM server cell, and where they come from."""

    ttft_s: float
    tpot_s: float
    source: str


@dataclass(frozen=True, slots=True)
class TokenAgreement:
    """The replies' token agreement with the reference (``accelbench.generation.quality.Agreement``)."""

    identical_share: float
    identical_replies: int
    replies: int
    first_divergence: tuple[int | None, ...]
    tie_divergences: int
    threshold: float
    passed: bool
    detail: str


@dataclass(frozen=True, slots=True)
class ReplyCheckFigures:
    """One reply check of a generative cell (TEST06, TEST09)."""

    passed: bool
    value: float
    detail: str


@dataclass(frozen=True, slots=True)
class GenerationFigures:
    """The ``generation`` section of an LLM decode cell (``accelbench.generation.figures.section``):
    the model and its conversion, LoadGen's token figures of the scored run, the quality checks."""

    model: str
    model_description: str
    params: int
    precision: str
    weight_format: str
    conversion_s: float | None
    prepare_s: float
    timed_prompts: int
    prompts: int
    max_new_tokens: int
    length_distribution: str
    kv_cache_bytes_per_token_fp32: int | None
    scenario: str
    valid: bool
    invalid_reasons: tuple[str, ...]
    queries: int
    output_tokens: int
    mean_prompt_tokens: float | None
    mean_output_tokens: float | None
    ttft_mean_s: float | None
    ttft_percentiles_s: Mapping[str, float]
    tpot_mean_s: float | None
    tpot_percentiles_s: Mapping[str, float]
    latency_mean_s: float | None
    tokens_per_s: float | None
    decode_tokens_per_s: float | None
    prefill_tokens_per_s_sut: float | None
    goodput_qps_sut: float | None
    bounds: TokenBounds | None
    agreement: TokenAgreement
    checks: Mapping[str, ReplyCheckFigures]
    energy_per_output_token_j: float | None = None
    """Only with an energy figure (the key is absent otherwise)."""

    def to_dict(self) -> dict[str, Any]:
        """The stored ``generation`` section."""
        document = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for name in ("bounds", "agreement"):
            record = document[name]
            document[name] = None if record is None else plain(dataclasses.asdict(record))
        document["checks"] = {name: dataclasses.asdict(check) for name, check in self.checks.items()}
        for name in ("invalid_reasons", "ttft_percentiles_s", "tpot_percentiles_s"):
            document[name] = plain(document[name])
        if self.energy_per_output_token_j is None:
            del document["energy_per_output_token_j"]
        return document

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> GenerationFigures:
        """A stored ``generation`` section."""
        values = dict(document)
        bounds, agreement = values.get("bounds"), dict(values["agreement"])
        agreement["first_divergence"] = tuple(agreement["first_divergence"])
        values["bounds"] = None if bounds is None else TokenBounds(**bounds)
        values["agreement"] = TokenAgreement(**agreement)
        values["checks"] = {name: ReplyCheckFigures(**c) for name, c in (values.get("checks") or {}).items()}
        values["invalid_reasons"] = tuple(values.get("invalid_reasons") or ())
        values["ttft_percentiles_s"] = dict(values.get("ttft_percentiles_s") or {})
        values["tpot_percentiles_s"] = dict(values.get("tpot_percentiles_s") or {})
        return cls(**values)
