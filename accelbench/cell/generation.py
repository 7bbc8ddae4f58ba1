"""The LLM decode driver (``tokens``): measure one generative cell (single-stream, offline, server) in the
cell process, the generating stack's code in a SUT process of its own (``accelbench.sut``), and return
its ``Outcome`` with a ``TokensBody``. The steps (the reference replies, the
stack's preparation and calibration, LoadGen in token mode between two noise probes, the quality gate and
the three audits) are told in ``docs/llm.md`` ("How a generative cell is measured").
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelbench import audits
from accelbench.audits.verdict import FAIL, PASS, Verdict
from accelbench.cell.token_feeds import TokenFeeds
from accelbench.cell.tokens_body import TokensBody
from accelbench.cellspec import CellSpec
from accelbench.errors import Unavailable, Unsupported
from accelbench.generation import figures as token_figures
from accelbench.generation.base import GenerationContext, Generator
from accelbench.generation.loadgen_tokens import (
    MIN_TOKEN_QUERIES,
    ServerBounds,
    TokenFigures,
    TokenRun,
    measure_tokens,
    scaled_bounds,
    timed_prompts,
)
from accelbench.generation.models import LlmModel, load_model
from accelbench.generation.prompts import PromptSet, make_prompts
from accelbench.generation.quality import (
    CACHE_AUDIT_RATIO,
    Agreement,
    ReplyCheck,
    agreement,
    check_test06,
    check_test09,
    prefix_cache_audit,
)
from accelbench.generation.reference import Reference, prompt_reference, sent_reference
from accelbench.generation.timing_audits import first_token_audit, repeat_audit
from accelbench.generation.workload import SCENARIOS, GenerativeWorkload
from accelbench.head import Head, NoiseProbe, Quality
from accelbench.loadgen_figures import LoadgenVerdict
from accelbench.meters import noise
from accelbench.meters.window import CellMeters, Metered
from accelbench.outcome import Outcome
from accelbench.registry import instantiate
from accelbench.scenarios import server_search
from accelbench.scenarios.rules import Rules, get_rules
from accelbench.sections import GenerationFigures, ServerSearch
from accelbench.sut import generation_remote
from accelbench.sut.environment import sut_environment
from accelbench.sut.generation_remote import RemoteGenerator
from accelbench.sut.remote import SutCpu, SutProcess
from accelbench.versions import with_python

ATTEMPTS = 2
CALIBRATION_REPLIES = 3
SERVER_START_FRACTION = 1.0
"""The search starts at this fraction of the single-reply capacity ``1 / latency``. A probe lasts its
query count over its target QPS, so the low targets cost the most: a stack that overlaps replies
reaches 3-4x this capacity (torch-eager, tiny-llama: VALID at 19.9 QPS from 7.0), and starting at half
of it added a 143 s probe to a 150 s search."""


def measure(spec: CellSpec) -> Outcome:
    """The outcome of a generative cell (see the module text); the stack's code runs in a SUT process of
    its own (``accelbench.sut``), which gets each prompt only when its query is issued."""
    scenario = spec.cell.scenario
    if scenario not in SCENARIOS:
        raise Unsupported(f"LLM decode runs {', '.join(SCENARIOS)}, not {scenario}")
    sut = SutProcess(spec.refs.stack, Path(spec.folders.cell_dir) / "sut", sut_environment())
    # the SUT process imports the stack while this process builds the model, the prompts and the reference
    sut.post({"op": "generation_describe", "device": spec.cell.device})
    try:
        return measure_with(spec, sut)
    finally:
        sut.stop()


def measure_with(spec: CellSpec, sut: SutProcess) -> Outcome:
    """The outcome of a generative cell whose stack runs behind ``sut``."""
    reason = generation_remote.describe(sut, spec.cell.device)
    if reason:
        raise Unavailable(reason)
    workload: GenerativeWorkload = instantiate(spec.refs.workload)
    cache = Path(spec.folders.model_cache_dir)  # models and conversions outlive the run
    model = load_model(workload.model, cache)
    prompts = make_prompts(model, workload.prompts, seed=spec.seed)
    reference = _reference(model, prompts, cache, spec)
    keep = timed_prompts(reference.replies)
    feeds = TokenFeeds([prompts.prompts[i] for i in keep], prompts, model, spec.input_seed)
    start = time.perf_counter()
    ctx = GenerationContext(cache / "llm-stacks", threads=spec.threads, device=spec.cell.device)
    generator = generation_remote.prepare(sut, model, ctx)
    prepare_s = time.perf_counter() - start
    latency_s = _calibrated_latency_s(generator, feeds, prompts.max_new_tokens)
    rules = get_rules(spec.rules)
    bounds = _bounds(workload, model)
    log_dir = Path(spec.folders.cell_dir) / "loadgen"
    meters = CellMeters(spec.cell.device, spec.measured_fp32_flops_per_s)
    retried = ""
    for attempt in range(ATTEMPTS):
        probe_start = noise.begin(spec.noise_floor)
        meters.begin("scored")
        cpu_start_s, in_calls_start_s = sut.cpu_s(), sut.cpu_in_calls_s
        search, run = _measure(
            generator, feeds, prompts.max_new_tokens, spec.cell.scenario, rules, latency_s, bounds, log_dir
        )
        metered = meters.end("scored", max(run.queries, 1))
        sut_cpu = SutCpu(cpu_s=sut.cpu_s() - cpu_start_s, in_calls_s=sut.cpu_in_calls_s - in_calls_start_s)
        # the guard's samples: each reply's TPOT in completion order (it hardly depends on the prompt)
        probe = noise.end(probe_start, [r.time_per_output_token_s for r in run.replies if len(r.tokens) > 1])
        if not noise.worth_retrying(probe) or attempt == ATTEMPTS - 1:
            break
        retried = noise.unstable_reason(probe)
        log_dir = Path(spec.folders.cell_dir) / f"loadgen-attempt{attempt + 2}"
    meters.close()
    probe = dataclasses.replace(probe, retried=retried)
    measured = _Measured(
        run=run,
        search=search,
        probe=probe,
        metered=metered,
        prepare_s=prepare_s,
        log_dir=log_dir,
        sut_cpu=sut_cpu,
    )
    return _outcome(spec, generator, model, prompts, feeds, keep, measured)


@dataclass(frozen=True, slots=True)
class _Measured:
    """What the timed part of the cell produced."""

    run: TokenFigures
    """The scored LoadGen run (server: the search's VALID probe at its max QPS, else its last)."""
    search: ServerSearch | None
    """The stored server search (``_search_record``)."""
    probe: NoiseProbe
    metered: Metered
    prepare_s: float
    log_dir: Path
    sut_cpu: SutCpu
    """CPU the SUT process spent over the measurement (server: the search's probes too), and in calls."""


def _reference(model: LlmModel, prompts: PromptSet, cache: Path, spec: CellSpec) -> Reference:
    """The reference replies to the workload's prompts (the run's cache, or made now)."""
    name = f"{model.name}-seed{prompts.seed}-{len(prompts.prompts)}.json"
    path = Path(spec.folders.cache_dir) / "llm-reference" / name
    ctx = GenerationContext(cache / "llm-stacks", threads=spec.threads)
    return prompt_reference(model, prompts.prompts, prompts.max_new_tokens, path, ctx)


def _calibrated_latency_s(generator: Generator, feeds: TokenFeeds, cap: int) -> float:
    """Median latency of ``CALIBRATION_REPLIES`` replies after a warm-up reply to every timed prompt
    (a stack's first call at a new prompt length can be 10x slower: kernels built per shape); every
    prompt salted, never sent again."""
    import statistics

    feed = feeds.new()
    for base in range(len(feeds.timed)):
        generator.generate(feed.fresh(base), cap)
    replies = [generator.generate(feed.fresh(i % len(feeds.timed)), cap) for i in range(CALIBRATION_REPLIES)]
    return statistics.median(r.latency_s for r in replies)


def _bounds(workload: GenerativeWorkload, model: LlmModel) -> ServerBounds:
    return scaled_bounds(model.params, workload.server_floor_ttft_s, workload.server_floor_tpot_s)


def _measure(
    generator: Generator,
    feeds: TokenFeeds,
    cap: int,
    scenario: str,
    rules: Rules,
    latency_s: float,
    bounds: ServerBounds,
    log_dir: Path,
) -> tuple[ServerSearch | None, TokenFigures]:
    """The scenario's LoadGen run (server: the search, then the scored run at its max QPS)."""
    minimum = max(rules.min_queries_for("single-stream"), MIN_TOKEN_QUERIES)
    timed = feeds.timed
    if scenario != "server":
        run = TokenRun(scenario, rules.min_duration_s, minimum, expected_latency_s=latency_s)
        return None, measure_tokens(generator, timed, cap, run, log_dir, feeds.new())
    probes: list[TokenFigures] = []

    def probe(target_qps: float) -> server_search.Probe:
        queries = max(rules.min_queries_for("server"), MIN_TOKEN_QUERIES)  # early stopping of the p99s
        run = TokenRun(
            scenario="server",
            min_duration_s=rules.server_min_duration_s,
            min_queries=queries,
            expected_latency_s=latency_s,
            target_qps=target_qps,
            bounds=bounds,
        )
        figures = measure_tokens(generator, timed, cap, run, log_dir / f"probe-{len(probes)}", feeds.new())
        probes.append(figures)
        p99 = figures.ttft_percentiles_s.get(99.0, 0.0)
        completed = figures.summary.completed_samples_per_s if figures.summary else None
        return server_search.Probe(target_qps, figures.valid, p99, completed or 0.0, figures.invalid_reasons)

    start = SERVER_START_FRACTION / max(latency_s, 1e-6)
    search = server_search.search(probe, start, rules.server_search_probes, bounds.ttft_s)
    best = [
        f for f, p in zip(probes, search.probes, strict=True) if p.valid and p.target_qps == search.max_qps
    ]
    return _search_record(search, probes), best[0] if best else probes[-1]


def _search_record(search: server_search.Search, runs: Sequence[TokenFigures]) -> ServerSearch:
    """The stored search, each probe with LoadGen's p99 TTFT and TPOT too (the report's curves)."""
    record = search.record()
    probes = tuple(
        dataclasses.replace(
            probe, ttft_p99_s=run.ttft_percentiles_s.get(99.0), tpot_p99_s=run.tpot_percentiles_s.get(99.0)
        )
        for probe, run in zip(record.probes, runs, strict=True)
    )
    return dataclasses.replace(record, probes=probes)


@dataclass(frozen=True, slots=True)
class _Judgement:
    """The scored run's replies judged: the quality gate's parts, the audits, the cell's status."""

    quality: Agreement
    prompts: int
    """Replies judged against the reference (to distinct never-seen prompts)."""
    checks: tuple[ReplyCheck, ...]
    verdicts: tuple[Verdict, ...]
    status: str
    reason: str


def _judge(
    spec: CellSpec,
    generator: Generator,
    model: LlmModel,
    prompts: PromptSet,
    feeds: TokenFeeds,
    measured: _Measured,
) -> _Judgement:
    """Token agreement with the reference, TEST06 and TEST09, the audits, and the status."""
    run = measured.run
    judged = feeds.judged(run)
    sent = [run.sent[i].prompt for i in judged]
    ctx = GenerationContext(Path(spec.folders.model_cache_dir) / "llm-stacks", threads=spec.threads)
    reference = sent_reference(model, sent, prompts.max_new_tokens, ctx) if sent else Reference([], [])
    replies = [run.replies[i] for i in judged]
    if replies:
        quality = agreement(reference.replies, replies, generator.precision, reference.margins)
    else:
        quality = Agreement(
            identical_share=0.0,
            first_divergence=(),
            tie_divergences=-1,
            precision=generator.precision,
            threshold=1.0,
            passed=False,
            detail="no reply to judge",
        )
    checks = (
        check_test06(run.replies, prompts.max_new_tokens, model.eos_token_id),
        check_test09(reference.replies, replies),
    )
    verdicts = (
        repeat_audit(run.replies, run.sent),
        first_token_audit(run.replies),
        _cache(generator, prompts),
    )
    failures = [name for name, passed in _gate(quality.passed, checks) if not passed]
    invalid = [] if run.valid else [f"{spec.cell.scenario}: {'; '.join(run.invalid_reasons) or 'no reason'}"]
    if measured.search and measured.search.max_qps <= 0:
        ttft = f"{run.bounds.ttft_s * 1e3:g} ms" if run.bounds else "?"
        invalid.append(f"no target QPS met p99 TTFT {ttft} and TPOT bounds")
    probe = measured.probe
    status, why = audits.cell_status(
        verdicts, failures, invalid, noise.unstable_reason(probe), noise.outside_reason(probe)
    )
    return _Judgement(
        quality=quality, prompts=len(replies), checks=checks, verdicts=verdicts, status=status, reason=why
    )


def _cache(generator: Generator, prompts: PromptSet) -> Verdict:
    """The prefix-cache audit after the run (immediate repeats of the longest prompt's fresh versions)."""
    check = prefix_cache_audit(generator, sorted(prompts.prompts, key=len)[-1], max_new_tokens=1)
    evidence = {"ratio": round(check.value, 4), "bar": CACHE_AUDIT_RATIO}
    return Verdict("prefix_cache", PASS if check.passed else FAIL, check.detail, evidence)


def _facts(
    generator: Generator, model: LlmModel, prompts: PromptSet, keep: Sequence[int], prepare_s: float
) -> dict[str, Any]:
    """What the generation section records of the model, its conversion and the prompts."""
    return {
        "model": model.name,
        "model_description": model.description,
        "params": model.params,
        "precision": generator.precision,
        "weight_format": generator.weight_format,
        "conversion_s": generator.conversion_s,
        "prepare_s": prepare_s,
        "timed_prompts": len(keep),
        "prompts": len(prompts.prompts),
        "max_new_tokens": prompts.max_new_tokens,
        "length_distribution": prompts.length_distribution,
        "kv_cache_bytes_per_token_fp32": token_figures.kv_cache_bytes_per_token(model.folder),
    }


def _outcome(
    spec: CellSpec,
    generator: RemoteGenerator,
    model: LlmModel,
    prompts: PromptSet,
    feeds: TokenFeeds,
    keep: Sequence[int],
    measured: _Measured,
) -> Outcome:
    """Judge the scored run's replies and assemble the outcome."""
    run, rules = measured.run, get_rules(spec.rules)
    judged = _judge(spec, generator, model, prompts, feeds, measured)
    found = token_figures.figures_of([run], measured.search.max_qps if measured.search else None)
    prompt_tokens = [len(sent.prompt) for sent in run.sent]
    facts = _facts(generator, model, prompts, keep, measured.prepare_s)
    section = token_figures.section(run, prompt_tokens, judged.quality, judged.checks, facts)
    generation = GenerationFigures.from_dict(section)
    energy = measured.metered.energy
    if energy is not None and generation.output_tokens:
        per_token_j = energy.energy_j / generation.output_tokens
        generation = dataclasses.replace(generation, energy_per_output_token_j=per_token_j)
    verdict = LoadgenVerdict(
        scenario=spec.cell.scenario,
        valid=run.valid,
        invalid_reasons=run.invalid_reasons,
        qps=found.qps,
        queries=run.queries,
        rules=spec.rules,
        official=rules.official,
        log_dir=str(measured.log_dir.relative_to(spec.folders.run_dir)),
    )
    head = _head(spec, generator, judged, measured)
    audit = audits.section(judged.verdicts, salt_tokens=feeds.place.salt_tokens)
    return Outcome(head, TokensBody(verdict, found, generation, measured.search, audit))


def _head(spec: CellSpec, generator: RemoteGenerator, judged: _Judgement, measured: _Measured) -> Head:
    """What every driver reports: the status, the token agreement as the quality record, the noise,
    energy and the settings (the SUT process's CPU time among them)."""
    agreed = judged.quality
    return Head(
        status=judged.status,
        reason=judged.reason,
        quality=Quality(
            metric="identical_token_share",
            value=agreed.identical_share,
            threshold=agreed.threshold,
            passed=agreed.passed,
            samples_checked=judged.prompts,
            detail=agreed.detail,
        ),
        effective_precision=generator.precision,
        compile_s=measured.prepare_s,
        noise=measured.probe,
        energy=measured.metered.energy,
        warnings=tuple(w for w in (*measured.metered.warnings, *noise.retry_warnings(measured.probe)) if w),
        versions={**with_python(("accelbench", "numpy", "torch", "mlcommons-loadgen")), **generator.versions},
        settings={
            "threads": spec.threads,
            "rules": spec.rules,
            "seed": spec.seed,
            "stack": dict(generator.details),
            "sut_process": {
                "cpu_s": measured.sut_cpu.cpu_s,
                "in_calls_s": measured.sut_cpu.in_calls_s,
                "off_calls_s": measured.sut_cpu.off_calls_s,
            },
        },
    )


def _gate(agreed: bool, checks: Sequence[ReplyCheck]) -> list[tuple[str, bool]]:
    return [("token agreement", agreed), *((c.name, c.passed) for c in checks)]
