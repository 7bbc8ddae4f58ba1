"""One trial of a cell, in a fresh process: build, prepare, calibrate, measure, keep the evidence.

MLPerf's trials are separate runs, so accelbench runs each trial of a cell in a fresh interpreter
(``multiprocessing`` spawn): no state of one trial (a warmed cache, a compiled graph, allocator
state) carries into the next. A cell with one trial runs it in the cell's own process, which is fresh
already. Trial 0 decides the batch (``--batch``, the sweep, or the stack's default) and, for server,
searches the max QPS; the later trials run at what it found (every trial again, one step lower, after an
INVALID scored server trial: ``accelbench.cell.inference``). The last trial also runs the sanity check
and the post-run audits. Every trial keeps the outputs it checked with their fp32 references and its
seen/never-seen pairs; the cell judges them together (``accelbench.cell.inference``). Each trial draws
all its inputs from its own seed under the cell's secret input seed (``accelbench.cell.samples``), so no
trial's inputs were seen by another; the timed pool is drawn after ``stack.prepare`` returned.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from accelbench import variants
from accelbench.audits import post_run
from accelbench.audits.feed import Check, Origin, Pair
from accelbench.cell import checks
from accelbench.cell.loadgen_settings import loadgen_settings
from accelbench.cell.samples import SampleSets
from accelbench.cellspec import CellSpec
from accelbench.errors import CellError, Unavailable, Unsupported, first_line
from accelbench.head import Quality
from accelbench.meters import memory
from accelbench.meters.window import CellMeters
from accelbench.registry import instantiate
from accelbench.scenarios import batch_sweep, batching
from accelbench.scenarios.loadgen import batch_for
from accelbench.scenarios.rules import Rules, get_rules
from accelbench.scenarios.trials import Timed, run_trial
from accelbench.sut import hardening, launcher
from accelbench.sut.environment import peak_rss_bytes, sut_environment
from accelbench.sut.remote import StackFacts, SutCpu, SutProcess
from accelbench.workloads.base import Inputs, Workload

AUDIT_STRIDE = 1 << 20
"""The pool, hot and cold samples of trial slot ``k`` (``_slot``) are numbered from ``k * AUDIT_STRIDE``
in the cell's evidence (``Check.origin``), so no two trials' samples share a number."""
SLOTS_PER_ROUND = 16
"""Trial slots of one round of trials; a server back-off round takes the next 16, so its inputs (drawn
from the slot's own seed) were never seen by an earlier round's process (nor left in a disk cache)."""


@dataclass(frozen=True, slots=True)
class Plan:
    """Which trial to run, and what trial 0 decided for the later ones."""

    number: int
    attempt: int
    last: bool
    batch: int | None = None
    target_qps: float | None = None
    backoff: int = 0
    """Server: how many times the scored trials ran lower after an INVALID one (0 at first)."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a trial measured and what the cell's judgement needs from it."""

    number: int
    timed: Timed
    effective_precision: str
    compile_s: float
    batch: int
    pool_size: int
    details: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    checks: tuple[Check, ...] = ()
    references: dict[Origin, np.ndarray] = field(default_factory=dict)
    """fp32 reference of every checked input, by origin."""
    pairs: tuple[Pair, ...] = ()
    feed_seed: int = 0
    swept: dict[str, Any] | None = None
    post: post_run.PostRun | None = None
    sanity: Quality | None = None
    peak_rss_bytes: int = 0
    computes: bool = True
    """The stack's declaration (asked in the SUT process): False only for the null stack."""
    sut_cpu: SutCpu | None = None
    """CPU the SUT process spent over the timed window, and inside the calls of it."""


def evidence_of(spec: CellSpec, plan: Plan, trials: int) -> Evidence:
    """The trial's evidence: run here when the cell has one trial (its first attempt: this process is
    fresh), else in a fresh process."""
    fresh = trials == 1 and plan.attempt == 0 and plan.backoff == 0
    return run(spec, plan) if fresh else spawned(spec, plan)


def spawned(spec: CellSpec, plan: Plan) -> Evidence:
    """Run the trial in a fresh interpreter; its failure is raised here as the same ``CellError``."""
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(
        target=_worker, args=(spec.to_dict(), plan, sender, launcher.control), daemon=True
    )
    process.start()
    sender.close()
    try:
        message = receiver.recv()
    except EOFError:
        message = None
    process.join()
    if message is None:
        raise CellError(f"trial {plan.number} process died (exit code {process.exitcode})")
    kind, payload = message
    if kind == "ok":
        return payload
    error = Unsupported if kind == "unsupported" else CellError
    raised = error(payload)
    raised.status = kind
    raise raised


def _worker(spec_document: dict[str, Any], plan: Plan, sender: Any, control: Any = None) -> None:
    hardening.make_undumpable()  # this process holds the cell's input seed and the trial's samples
    launcher.control = control  # the runner forks its SUT processes, as the cell's
    try:
        message: tuple[str, Any] = ("ok", run(CellSpec.from_dict(spec_document), plan))
    except CellError as err:
        message = (err.status, str(err))
    except MemoryError:
        message = ("oom", f"MemoryError in the process of trial {plan.number}")
    except Exception as err:
        traceback.print_exc()
        message = ("crashed", first_line(err))
    sender.send(message)
    sender.close()


def run(spec: CellSpec, plan: Plan) -> Evidence:
    """Run the trial in this process, the stack's code in a SUT process of its own
    (``accelbench.sut``): this process holds the samples, the seeds and the audits, and the stack
    cannot read it."""
    sut = SutProcess(spec.refs.stack, Path(spec.folders.cell_dir) / "sut", sut_environment())
    # the SUT process imports the stack and builds its model while this process builds its own
    sut.post({"op": "describe", "device": spec.cell.device})
    sut.post({**_prepare_request(spec, None, 1), "op": "warm"})
    try:
        return run_with(spec, plan, sut)
    finally:
        sut.stop()


def run_with(spec: CellSpec, plan: Plan, sut: SutProcess) -> Evidence:
    """The trial, its stack behind ``sut`` (a ``SutProcess``; the overhead benchmark passes an
    ``accelbench.sut.inprocess.InProcessSut`` of the same interface)."""
    workload: Workload = instantiate(spec.refs.workload)
    checks.set_torch_threads(spec.threads)
    drawn = variants.resolve(workload, spec.cell.size, spec.cell.variant)
    variant = drawn.variant if drawn else None
    facts = sut.describe(spec.cell.device)
    if facts.unavailable_reason:
        raise Unavailable(facts.unavailable_reason)
    # the fp32 reference; the SUT process builds its own copy from the same public weights seed (the
    # null stack never looks at the model: it is not built, so it measures the harness alone)
    model = variants.build_model(workload, spec.cell.size, spec.seed, variant) if facts.computes else None
    sets = SampleSets(workload, spec, variant, (plan.attempt, _slot(plan)))
    reference = checks.reference_of(model)
    rules = get_rules(spec.rules)
    batch, swept = plan.batch, None
    if batch is None:
        batch = _batch(spec, sut, facts, workload)
        sweeps = spec.cell.scenario in ("offline", "multi-stream") and loadgen_settings(spec).batch_sweep
        if sweeps and facts.computes:
            batch, swept = _sweep(spec, sut, workload, sets, rules, reference)
    example = batching.join(sets.example(batch), batch)
    session, prepared = sut.prepare(_prepare_request(spec, workload, batch), example)
    try:
        feed = sets.feed(rules, batch) if facts.computes else None
        timed, sut_cpu = _timed(spec, plan, sut, session.infer, sets, rules, feed, batch)
        evidence = Evidence(
            number=plan.number,
            timed=timed,
            effective_precision=session.effective_precision,
            compile_s=session.compile_s,
            batch=batch,
            pool_size=sets.pool_size,
            details=sut.details(prepared.session),
            versions=dict(prepared.versions),
            swept=swept,
            computes=facts.computes,
            # a served session's calls overlap (its SUT process is an HTTP client): no "between calls"
            sut_cpu=None if prepared.asynchronous else sut_cpu,
        )
        if feed is not None:
            evidence = _with_feed(evidence, feed, plan, reference)
        if plan.last and facts.computes:
            one = batching.one_at_a_time(session.infer, batch)
            evidence = dataclasses.replace(
                evidence,
                post=checks.post_run_checks(
                    workload, spec.cell.size, sets, one, reference, session.effective_precision
                ),
                sanity=checks.sanity(workload, spec.cell.size, one, variant),
            )
    finally:
        # a served session's server stops with its trial, before the cell's closing noise probe
        sut.close_session(prepared.session)
    return dataclasses.replace(evidence, peak_rss_bytes=max(memory.peak_rss_bytes(), peak_rss_bytes(sut)))


def _timed(
    spec: CellSpec,
    plan: Plan,
    sut: SutProcess,
    infer: Callable[[Inputs], np.ndarray],
    sets: SampleSets,
    rules: Rules,
    feed: Any,
    batch: int,
) -> tuple[Timed, SutCpu]:
    """The trial's LoadGen run under the cell's meters, and the SUT process's CPU meanwhile."""
    meters = CellMeters(spec.cell.device, spec.measured_fp32_flops_per_s)
    cpu_start_s, in_calls_start_s = sut.cpu_s(), sut.cpu_in_calls_s
    try:
        lower = f"-b{plan.backoff}" if plan.backoff else ""
        log_dir = Path(spec.folders.cell_dir) / "loadgen" / f"a{plan.attempt}-t{plan.number}{lower}"
        timed = run_trial(
            spec.cell.scenario,
            infer,
            sets.timed,
            sets.calibration,
            rules,
            log_dir,
            meters,
            feed,
            batch,
            plan.target_qps,
        )
    finally:
        meters.close()
    used = SutCpu(cpu_s=sut.cpu_s() - cpu_start_s, in_calls_s=sut.cpu_in_calls_s - in_calls_start_s)
    return timed, used


def _with_feed(
    evidence: Evidence, feed: Any, plan: Plan, reference: Callable[[Inputs], np.ndarray]
) -> Evidence:
    """The evidence with the feed's checks (their fp32 references) and pairs, numbered across the cell."""
    checks = tuple(_renumbered(c, plan) for c in feed.checks)
    origins = {c.origin: o.origin for c, o in zip(checks, feed.checks, strict=True)}
    references = {mine: reference(feed.audit_input(theirs)) for mine, theirs in origins.items()}
    pairs = tuple(dataclasses.replace(p, trial=_trial_number(plan, p.trial)) for p in feed.pairs)
    return dataclasses.replace(
        evidence, checks=checks, references=references, pairs=pairs, feed_seed=feed.seed
    )


def _renumbered(check: Check, plan: Plan) -> Check:
    """The check with a trial number unique across the cell, and an origin unique too: every trial slot
    draws its own inputs (its pool included), so pool index ``i`` of two slots is two different inputs,
    each with its own reference."""
    kind, number = check.origin
    origin = (kind, _slot(plan) * AUDIT_STRIDE + number)
    return dataclasses.replace(check, trial=_trial_number(plan, check.trial), origin=origin)


def _trial_number(plan: Plan, feed_trial: int) -> int:
    """Cell trial ``plan.number``'s LoadGen test ``feed_trial`` (a second one when an offline query
    ended early) as one number, in run order across back-off rounds."""
    return _slot(plan) * 16 + feed_trial


def _slot(plan: Plan) -> int:
    """The trial's place among every trial the cell ran, back-off rounds included."""
    return plan.backoff * SLOTS_PER_ROUND + plan.number


def _batch(spec: CellSpec, sut: SutProcess, facts: StackFacts, workload: Workload) -> int:
    """The samples per call: ``LoadgenSettings.batch`` when fixed (a refusal makes the cell unsupported),
    else the stack's default (1 where the stack or the workload cannot batch); 1 for single-stream and
    server."""
    if spec.cell.scenario in ("single-stream", "server"):
        return 1
    fixed = loadgen_settings(spec).batch
    default = fixed is None
    wanted = fixed if fixed is not None else facts.default_batch
    if spec.cell.scenario == "multi-stream" and default:  # a batch divides the 8 samples of a query
        wanted = max(b for b in (1, 2, 4, 8) if b <= wanted)
    try:
        batch = batch_for(spec.cell.scenario, wanted)
    except ValueError as err:
        raise Unsupported(str(err)) from None
    if batch == 1:
        return 1
    reason = sut.batch_reason(spec.cell.workload, batch) or workload.batch_reason(spec.cell.size)
    if reason and default:
        return 1
    if reason:
        raise Unsupported(f"batch {batch}: {reason}")
    return batch


def _sweep(
    spec: CellSpec,
    sut: SutProcess,
    workload: Workload,
    sets: SampleSets,
    rules: Rules,
    reference: Callable[[Inputs], np.ndarray],
) -> tuple[int, dict[str, Any]]:
    """``--batch-sweep``: the best verified batch (``accelbench.scenarios.batch_sweep``) and the curve."""
    from accelbench.meters.quality import compare

    def prepare(batch: int) -> Callable[[Inputs], np.ndarray]:
        refused = sut.batch_reason(spec.cell.workload, batch) if batch > 1 else None
        refused = refused or (workload.batch_reason(spec.cell.size) if batch > 1 else None)
        if refused:
            raise Unsupported(refused)
        example = batching.join(sets.example(batch), batch)
        ready, _ = sut.prepare(_prepare_request(spec, workload, batch), example)
        return ready.infer

    def correct(infer: Callable[[Inputs], np.ndarray], batch: int) -> str:
        rows = [sets.calibration[k % len(sets.calibration)] for k in range(batch)]
        outputs = batching.split(infer(batching.join(rows, batch)), batch, batch)
        verdict = compare(workload.quality_metric, [reference(r) for r in rows], outputs, "fp32")
        return "" if verdict.passed else f"outputs fail the quality gate: {verdict.detail or verdict.value}"

    log_root = Path(spec.folders.cell_dir) / "loadgen"
    batches = [b for b in loadgen_settings(spec).batch_sweep if spec.cell.scenario == "offline" or 8 % b == 0]
    chosen, points = batch_sweep.sweep(
        batches, prepare, correct, spec.cell.scenario, sets.timed, sets.calibration, rules, log_root
    )
    return chosen, batch_sweep.to_document(points, chosen)


def _prepare_request(spec: CellSpec, workload: Workload | None, batch: int) -> dict[str, Any]:
    """What the SUT process needs to build the model and prepare a session: the stack's ``ModelSpec``
    (but its example batch, which crosses as arrays) and ``CellContext``; nothing of the harness."""
    settings = loadgen_settings(spec)
    return {
        "workload_ref": spec.refs.workload,
        "workload": spec.cell.workload,
        "size": spec.cell.size,
        "seed": spec.seed,
        "variant": spec.cell.variant,
        "input_names": list(workload.input_names()) if workload is not None else [],
        "batch": batch,
        "device": spec.cell.device,
        "threads": spec.threads,
        "work_dir": str(Path(spec.folders.cell_dir) / "sut"),
        "cache_dir": spec.folders.cache_dir,
        "serve_url": settings.serve_url,
        "serve_cluster": settings.serve_cluster,
    }
