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

import copy
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
from accelbench.cell.samples import SampleSets
from accelbench.cellspec import CellSpec
from accelbench.errors import CellError, Unsupported
from accelbench.meters import memory
from accelbench.meters.window import CellMeters
from accelbench.registry import instantiate
from accelbench.results import Quality
from accelbench.scenarios import batch_sweep, batching
from accelbench.scenarios.loadgen import batch_for
from accelbench.scenarios.rules import Rules, get_rules
from accelbench.scenarios.trials import Timed, run_trial
from accelbench.stacks.base import CellContext, ModelSpec, Stack
from accelbench.workloads.base import Inputs, Variant, Workload

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


def evidence_of(spec: CellSpec, plan: Plan, trials: int) -> Evidence:
    """The trial's evidence: run here when the cell has one trial (its first attempt: this process is
    fresh), else in a fresh process."""
    fresh = trials == 1 and plan.attempt == 0 and plan.backoff == 0
    return run(spec, plan) if fresh else spawned(spec, plan)


def spawned(spec: CellSpec, plan: Plan) -> Evidence:
    """Run the trial in a fresh interpreter; its failure is raised here as the same ``CellError``."""
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_worker, args=(spec.to_dict(), plan, sender), daemon=True)
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


def _worker(spec_document: dict[str, Any], plan: Plan, sender: Any) -> None:
    try:
        message: tuple[str, Any] = ("ok", run(CellSpec.from_dict(spec_document), plan))
    except CellError as err:
        message = (err.status, str(err))
    except MemoryError:
        message = ("oom", f"MemoryError in the process of trial {plan.number}")
    except Exception as err:
        traceback.print_exc()
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        message = ("crashed", f"{type(err).__name__}: {first}"[:500])
    sender.send(message)
    sender.close()


def run(spec: CellSpec, plan: Plan) -> Evidence:
    """Run the trial in this process."""
    stack: Stack = instantiate(spec.stack_ref)
    workload: Workload = instantiate(spec.workload_ref)
    _set_torch_threads(spec.threads)
    drawn = variants.resolve(workload, spec.cell.size, spec.cell.variant)
    variant = drawn.variant if drawn else None
    # the null stack never looks at the model: skip building it, so it measures the harness alone
    model = variants.build_model(workload, spec.cell.size, spec.seed, variant) if stack.computes else None
    sets = SampleSets(workload, spec, variant, (plan.attempt, _slot(plan)))
    reference = _reference(copy.deepcopy(model))
    rules = get_rules(spec.rules)
    batch, swept = plan.batch, None
    if batch is None:
        batch = _batch(spec, stack, workload)
        if spec.batch_sweep and stack.computes and spec.cell.scenario in ("offline", "multi-stream"):
            batch, swept = _sweep(spec, stack, workload, model, sets, rules, reference)
    example = batching.join(sets.example(batch), batch)
    session = stack.prepare(model, _model_spec(spec, workload, example, batch), _context(spec))  # type: ignore[arg-type]
    try:
        feed = sets.feed(rules, batch) if stack.computes else None
        meters = CellMeters(spec.cell.device)
        try:
            lower = f"-b{plan.backoff}" if plan.backoff else ""
            log_dir = Path(spec.cell_dir) / "loadgen" / f"a{plan.attempt}-t{plan.number}{lower}"
            timed = run_trial(
                spec.cell.scenario, session.infer, sets.timed, sets.calibration, rules, log_dir, meters,
                feed, batch, plan.target_qps,
            )  # fmt: skip
        finally:
            meters.close()
        evidence = Evidence(
            plan.number, timed, session.effective_precision, session.compile_s, batch, sets.pool_size,
            dict(session.details), stack.versions(), swept=swept,
        )  # fmt: skip
        if feed is not None:
            checks = tuple(_renumbered(c, plan) for c in feed.checks)
            origins = {c.origin: o.origin for c, o in zip(checks, feed.checks, strict=True)}
            references = {mine: reference(feed.audit_input(theirs)) for mine, theirs in origins.items()}
            pairs = tuple(dataclasses.replace(p, trial=_trial_number(plan, p.trial)) for p in feed.pairs)
            evidence = dataclasses.replace(
                evidence, checks=checks, references=references, pairs=pairs, feed_seed=feed.seed
            )
        if plan.last and stack.computes:
            one = batching.one_at_a_time(session.infer, batch)
            evidence = dataclasses.replace(
                evidence,
                post=_post_run(workload, sets, one, reference, session.effective_precision),
                sanity=_sanity(workload, spec.cell.size, one, variant),
            )
    finally:
        # a served session's server stops with its trial, before the cell's closing noise probe
        if callable(close := getattr(session.infer, "close", None)):
            close()
    return dataclasses.replace(evidence, peak_rss_bytes=memory.peak_rss_bytes())


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


def _post_run(
    workload: Workload,
    sets: SampleSets,
    one: Callable[[Inputs], np.ndarray],
    reference: Callable[[Inputs], np.ndarray],
    effective_precision: str,
) -> post_run.PostRun:
    fresh = sets.alternate(post_run.samples_needed())
    return post_run.post_run_audits(
        one, reference, fresh, workload.quality_metric, effective_precision, sets.alternate_seed
    )


def _batch(spec: CellSpec, stack: Stack, workload: Workload) -> int:
    """The samples per call: ``spec.batch`` when fixed (a refusal makes the cell unsupported), else the
    stack's default (1 where the stack or the workload cannot batch); 1 for single-stream and server."""
    if spec.cell.scenario in ("single-stream", "server"):
        return 1
    default = spec.batch is None
    wanted = spec.batch if spec.batch is not None else stack.default_batch(spec.cell.device)
    if spec.cell.scenario == "multi-stream" and default:  # a batch divides the 8 samples of a query
        wanted = max(b for b in (1, 2, 4, 8) if b <= wanted)
    try:
        batch = batch_for(spec.cell.scenario, wanted)
    except ValueError as err:
        raise Unsupported(str(err)) from None
    if batch == 1:
        return 1
    reason = stack.batch_reason(spec.cell.workload, batch) or workload.batch_reason(spec.cell.size)
    if reason and default:
        return 1
    if reason:
        raise Unsupported(f"batch {batch}: {reason}")
    return batch


def _sweep(
    spec: CellSpec,
    stack: Stack,
    workload: Workload,
    model: Any,
    sets: SampleSets,
    rules: Rules,
    reference: Callable[[Inputs], np.ndarray],
) -> tuple[int, dict[str, Any]]:
    """``--batch-sweep``: the best verified batch (``accelbench.scenarios.batch_sweep``) and the curve."""
    from accelbench.meters.quality import compare

    def prepare(batch: int) -> Callable[[Inputs], np.ndarray]:
        refused = stack.batch_reason(spec.cell.workload, batch) if batch > 1 else None
        refused = refused or (workload.batch_reason(spec.cell.size) if batch > 1 else None)
        if refused:
            raise Unsupported(refused)
        example = batching.join(sets.example(batch), batch)
        ready = stack.prepare(
            copy.deepcopy(model), _model_spec(spec, workload, example, batch), _context(spec)
        )
        return ready.infer

    def correct(infer: Callable[[Inputs], np.ndarray], batch: int) -> str:
        rows = [sets.calibration[k % len(sets.calibration)] for k in range(batch)]
        outputs = batching.split(infer(batching.join(rows, batch)), batch, batch)
        verdict = compare(workload.quality_metric, [reference(r) for r in rows], outputs, "fp32")
        return "" if verdict.passed else f"outputs fail the quality gate: {verdict.detail or verdict.value}"

    log_root = Path(spec.cell_dir) / "loadgen"
    batches = [b for b in spec.batch_sweep if spec.cell.scenario == "offline" or 8 % b == 0]
    chosen, points = batch_sweep.sweep(
        batches, prepare, correct, spec.cell.scenario, sets.timed, sets.calibration, rules, log_root
    )
    return chosen, batch_sweep.to_document(points, chosen)


def _model_spec(spec: CellSpec, workload: Workload, example: Inputs, batch: int) -> ModelSpec:
    return ModelSpec(
        workload=spec.cell.workload,
        size=spec.cell.size,
        seed=spec.seed,
        variant=spec.cell.variant,
        input_names=workload.input_names(),
        example=example,
        batch=batch,
    )


def _context(spec: CellSpec) -> CellContext:
    return CellContext(
        device=spec.cell.device,
        threads=spec.threads,
        work_dir=Path(spec.cell_dir),
        cache_dir=Path(spec.cache_dir),
        serve_url=spec.serve_url,
        serve_cluster=spec.serve_cluster,
    )


def _set_torch_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def _reference(model: Any) -> Callable[[Inputs], np.ndarray]:
    """The fp32 eager reference as a function of one sample's inputs."""
    import torch

    def run(sample: Inputs) -> np.ndarray:
        with torch.inference_mode():
            return np.asarray(model(*(torch.from_numpy(a) for a in sample)).float().numpy())

    return run


def _sanity(
    workload: Workload, size: str, infer: Callable[[Inputs], np.ndarray], variant: Variant | None
) -> Quality | None:
    from accelbench.meters.quality import sanity_quality

    if variant is None:  # workloads written before variants take no variant argument
        verdict = workload.sanity_check(size, infer)
    else:
        verdict = workload.sanity_check(size, infer, variant)
    return sanity_quality(verdict) if verdict else None
