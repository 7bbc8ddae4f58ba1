"""Run configuration: frozen, validated, built from a suite, CLI overrides or a TOML file.

A suite is a named starting point (``default``, ``quick``, ``tiny``); every field can be overridden.
The configuration is stored with the run, so ``--resume`` replays exactly the same plan.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelbench.errors import UserError
from accelbench.inputs import RANGES, check_names, parse_toml, range_problem, read_input_text
from accelbench.knobs import Knobs
from accelbench.registry import GENERATING_STACKS, STACKS, is_served
from accelbench.scenarios.rules import SCENARIOS, get_rules
from accelbench.served_options import STORED, ServedOptions
from accelbench.settings import declared_knobs, knobs_problem
from accelbench.training import WORKLOADS as TRAINING_WORKLOADS

SIZES = ("tiny", "standard")
ALL_WORKLOADS = ("resnet50", "bert-base", "minilm-l6")
REAL_STACKS = ("torch-eager", "torch-inductor", "onnxruntime")
DEFAULT_WORKLOADS = ("resnet50", "minilm-l6")
"""The default suite's workloads: a CNN and a transformer encoder. bert-base (minilm-l6's encoder at
MLPerf's size) left it on 2026-12-06: its 4 cells were 187 of a 444 s ``make run`` on a 2-vCPU EPYC VM;
the quick suite keeps it."""
DEFAULT_STACKS = ("torch-eager", "onnxruntime")
"""The default suite's inference stacks (``make run``: 5 minutes on 2 cores). torch-inductor left it on
2026-12-02 (307 of 732 cell seconds), the null stack, the harness's own floor, on 2026-12-04 (45 of a
342 s run); the tiny suite keeps both, the quick suite inductor."""
DEFAULT_GENERATION_STACKS = ("torch-eager",)
"""The default suite's smollm2-135m stacks: what fits ``make run``'s 10 minutes here (docs/llm.md)."""


def _check_choice(kind: str, values: tuple[str, ...], known: tuple[str, ...]) -> None:
    check_names(values)
    unknown = [v for v in values if v not in known]
    if unknown:
        raise UserError(f"unknown {kind} {', '.join(unknown)}; known: {', '.join(known)}")


def default_knobs(given: Mapping[str, Any] | None = None) -> Knobs:
    """Every declared knob's value: ``given``'s, else its declared default."""
    declared = declared_knobs()
    chosen = {name: knob.setting_default for name, knob in declared.items()}
    return Knobs.of({**chosen, **(given or {})})


@dataclass(frozen=True, slots=True)
class RunConfig:
    """Everything that decides which cells run and how they are measured."""

    suite: str
    workloads: tuple[str, ...]
    stacks: tuple[str, ...]
    scenarios: tuple[str, ...]
    size: str
    rules: str
    devices: tuple[str, ...] = ("cpu",)
    threads: int = 0
    """Intra-op threads for every stack; 0 means "all cores this process may use"."""
    seed: int = 0
    """Seed of the models' weights (stacks see it: ``ModelSpec.seed``)."""
    input_seed: int | None = None
    """Seed of the run's inputs (``accelbench.cell.seeds``): None until the run draws one; stored only
    when the run ends; ``accelbench run --input-seed N`` replays a run's inputs."""
    samples: int = 64
    """Performance samples loaded into LoadGen's QSL."""
    timeout_s: float = 600.0
    mem_limit_bytes: int = 0
    """0 means three quarters of physical memory."""
    variants: int = 0
    """Seeded variants planned beside each canonical cell (``accelbench.variants``)."""
    variant_seed: int | None = None
    """Seed of the variants; None until a run with variants draws a fresh one and stores it."""
    generation_stacks: tuple[str, ...] = ()
    """The stacks of the generative workloads (``tiny-llama``, ``smollm2-135m``); empty: those of
    ``stacks`` that generate. Setting ``stacks`` (CLI, TOML) empties it, so the user's choice wins."""
    generation_scenarios: tuple[str, ...] = ()
    """The scenarios of the generative workloads; empty: ``scenarios``. Setting ``scenarios`` empties it."""
    served: ServedOptions = dataclasses.field(default_factory=ServedOptions)
    """``--serve-url``, ``--serve-hardware``, ``--api-key-env``, ``--serve-cluster``: where the served
    stacks' requests go and what serves them (stored flat, ``served_options.STORED``)."""
    knobs: Knobs = dataclasses.field(default_factory=default_knobs)
    """The drivers' knobs (``accelbench.knobs``), each declared once on its driver's settings record
    (``--runs``, ``--batch-sweep``, ...): every declared one, given or at its default. Stored flat, each
    under its run-setting name beside the fields above."""

    def __post_init__(self) -> None:
        _check_choice("scenario", self.scenarios + self.generation_scenarios, SCENARIOS)
        _check_choice("size", (self.size,), SIZES)
        get_rules(self.rules)
        self._check_measurement()
        self._check_knobs()
        self._check_serving()
        if not (self.workloads and self.stacks and self.scenarios and self.devices):
            raise UserError("a run needs at least one workload, stack, scenario and device")
        fields = {f.name for f in dataclasses.fields(self)}
        ranged = [p for name in RANGES if name in fields and (p := range_problem(name, getattr(self, name)))]
        if ranged:
            raise UserError(ranged[0])

    def _check_measurement(self) -> None:
        """Counts, seeds and batches of the measurement itself."""
        if self.timeout_s <= 0 or self.samples < 1 or self.threads < 0:
            raise UserError("timeout_s and samples must be positive, threads >= 0")
        if self.variants < 0 or (self.variant_seed is not None and self.variant_seed < 0):
            raise UserError("variants and variant_seed must be >= 0")
        if self.input_seed is not None and not 0 <= self.input_seed < 1 << 63:
            raise UserError(f"input_seed must be a whole number in [0, 2**63), got {self.input_seed}")

    def _check_knobs(self) -> None:
        """Each declared knob's value: its type, then its own check (``accelbench.knobs.Knob.check``)."""
        declared = declared_knobs()
        unknown = sorted(set(self.knobs) - set(declared))
        if unknown:
            raise UserError(f"unknown run setting {', '.join(unknown)}")
        for name, knob in declared.items():
            value = self.knobs.get(name, knob.setting_default)
            typed = _type_problem(name, knob.annotation, value)
            problem = typed or (knob.knob.check(value) if knob.knob.check else None)
            if problem:
                raise UserError(problem)
        together = knobs_problem(self.knobs)
        if together:
            raise UserError(together)

    def _check_serving(self) -> None:
        """The served and endpoint cells' options: the server and its address."""
        self.served.check()
        remote = [stack for stack in self.stacks if stack.endswith("@url")]
        if remote and self.served.url is None:
            raise UserError(f"stack {remote[0]} sends its requests to --serve-url, which was not given")

    def to_dict(self) -> dict[str, Any]:
        """Plain form, stored with the run: the knobs flat, each under its run-setting name."""
        document = dataclasses.asdict(self)
        del document["knobs"], document["served"]
        return {**document, **self.served.to_settings(), **self.knobs.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunConfig:
        """Rebuild from ``to_dict`` (or a TOML table); unknown keys are a UserError. A knob the document
        does not name (one declared after it was stored) takes its default."""
        problem = setting_problem(data)
        if problem:
            raise UserError(problem)
        fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        served = ServedOptions.from_settings(fields)
        given = {name: fields.pop(name) for name in declared_knobs() if name in fields}
        for name in STORED:
            fields.pop(name, None)
        return cls(**fields, served=served, knobs=default_knobs(given))


def setting_problem(data: Mapping[str, Any]) -> str | None:
    """Why ``data`` is not a valid set of run settings (unknown keys, wrong types), or None."""
    types = {f.name: str(f.type) for f in dataclasses.fields(RunConfig) if f.name not in ("knobs", "served")}
    served = {f.name: str(f.type) for f in dataclasses.fields(ServedOptions)}
    types |= {name: served[field] for name, field in STORED.items()}
    types |= {name: knob.annotation for name, knob in declared_knobs().items()}
    unknown = sorted(set(data) - set(types))
    if unknown:
        return f"unknown run setting {', '.join(map(str, unknown))}; known: {', '.join(sorted(types))}"
    wrong = [problem for k, v in data.items() if (problem := _type_problem(k, types[k], v))]
    return f"invalid run setting: {'; '.join(wrong)}" if wrong else None


def _type_problem(name: str, annotation: str, value: Any) -> str | None:
    """Why ``value`` does not fit the field's annotation (str, int, float, tuples of them, ``| None``)."""
    base = annotation.removesuffix(" | None")
    if value is None:
        return None if base != annotation else f"{name} must be {base}, got nothing"
    if base.startswith("tuple["):
        item = base.removeprefix("tuple[").partition(",")[0]
        fits = isinstance(value, list | tuple) and all(_scalar_fits(item, v) for v in value)
    else:
        fits = _scalar_fits(base, value)
    return None if fits else f"{name} must be {base}, got {str(value)[:60]!r}"


def _scalar_fits(kind: str, value: Any) -> bool:
    if isinstance(value, bool):
        return kind == "bool"
    if kind == "float":
        return isinstance(value, int | float) and math.isfinite(value)
    expected = {"str": str, "int": int, "bool": bool}.get(kind)
    return expected is None or isinstance(value, expected)


SUITES: Mapping[str, RunConfig] = {
    # make run's 5 minutes on 2 cores (issue 29): the LLM cell (165 s alone) is the llm suite's
    "default": RunConfig(
        suite="default",
        workloads=DEFAULT_WORKLOADS,
        stacks=DEFAULT_STACKS,
        scenarios=("single-stream", "offline"),
        size="standard",
        rules="quick",
    ),
    "llm": RunConfig(
        suite="llm",
        workloads=("smollm2-135m",),
        stacks=DEFAULT_STACKS,
        scenarios=("single-stream",),
        size="standard",
        rules="quick",
        generation_stacks=(*DEFAULT_GENERATION_STACKS, "llm@transformers-cb"),
        generation_scenarios=("single-stream",),
        # the served curve (issue 31): transformers serve with continuous batching, 4 points
        knobs=default_knobs({"concurrency": (1, 2, 4, 8), "endpoint_requests": 8, "output_tokens": 64}),
    ),
    # agentic multi-turn sessions (issue 44, docs/sessions.md): smollm2-135m on transformers serve with
    # continuous batching, 1-8 sessions at once, the defaults that fit 2 cores (3 turns, 16 tokens)
    "agentic": RunConfig(
        suite="agentic",
        workloads=("smollm2-135m",),
        stacks=("llm@transformers-cb",),
        scenarios=("single-stream",),
        size="standard",
        rules="quick",
        knobs=default_knobs({"sessions": (1, 2, 4, 8), "session_turns": 3, "output_tokens": 16}),
        # the cell took ~560 s of the default 600 at load 4-6 on 2 shared cores (2026-12-05): room to finish
        timeout_s=1200.0,
    ),
    "quick": RunConfig(
        suite="quick",
        workloads=ALL_WORKLOADS,
        stacks=REAL_STACKS,
        scenarios=("single-stream",),
        size="standard",
        rules="quick",
    ),
    "tiny": RunConfig(
        suite="tiny",
        workloads=(*ALL_WORKLOADS, *TRAINING_WORKLOADS),  # training workloads run only under train-to-quality
        stacks=("null", *REAL_STACKS),
        scenarios=("single-stream", "offline"),
        size="tiny",
        rules="quick",
        samples=16,
        generation_stacks=tuple(GENERATING_STACKS),
    ),
    # non-matmul work (accelbench.normalize.expressiveness); run it with --stacks all for the full matrix
    "expressiveness": RunConfig(
        suite="expressiveness",
        workloads=("gnn-sage", "dlrm-bags", "moe-topk", "ssm-scan", "dynamic-seq"),
        stacks=tuple(name for name in STACKS if name != "null" and not is_served(name)),
        scenarios=("single-stream",),
        size="tiny",
        rules="quick",
        samples=16,
        timeout_s=300.0,
    ),
}


def suite(name: str) -> RunConfig:
    """The named suite; unknown names are a UserError."""
    if name not in SUITES:
        raise UserError(f"unknown suite {name}; known: {', '.join(SUITES)}")
    return SUITES[name]


def load_toml(path: Path) -> dict[str, Any]:
    """Settings from the ``[run]`` table of a TOML file (malformed, special or huge file -> UserError)."""
    data = parse_toml(read_input_text(path, "config"), f"config {path}")
    run = data.get("run", data)
    if not isinstance(run, dict):
        raise UserError(f"config {path}: [run] must be a table")
    try:  # the file's values must hold on their own (over the default suite), not only once merged
        with_overrides(SUITES["default"], run)
    except UserError as err:
        raise UserError(f"config {path}: {err}") from None
    return run


def with_overrides(base: RunConfig, overrides: Mapping[str, Any]) -> RunConfig:
    """``base`` with the non-None ``overrides`` applied and validated."""
    data = base.to_dict()
    given = {k: v for k, v in overrides.items() if v is not None}
    for chosen, derived in (("stacks", "generation_stacks"), ("scenarios", "generation_scenarios")):
        if chosen in given and derived not in given:
            given[derived] = ()
    data.update(given)
    return RunConfig.from_dict(data)


def effective_threads(config: RunConfig) -> int:
    """The thread count every stack is given: the configured one, or the usable CPUs."""
    return config.threads or len(os.sched_getaffinity(0))


def effective_mem_limit_bytes(config: RunConfig) -> int:
    """The per-cell memory limit: the configured one, or 3/4 of physical memory."""
    if config.mem_limit_bytes:
        return config.mem_limit_bytes
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 3 // 4)


def with_variant_seed(config: RunConfig) -> RunConfig:
    """``config`` with a fresh variant seed when it plans variants without one (stored with the run)."""
    from accelbench.variants import fresh_seed

    if config.variants and config.variant_seed is None:
        return dataclasses.replace(config, variant_seed=fresh_seed())
    return config
