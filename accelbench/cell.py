"""The cell process: measure one cell in a fresh interpreter and write its outcome as JSON.

Run by the runner as ``python -m accelbench.cell SPEC.json``. Steps: draw the cell's variant (if any),
build the workload's model and three disjoint sets of samples (the timed pool, at least the workload's
``performance_sample_count``; calibration samples; audit samples), keep an fp32 eager copy as the
reference, let the stack prepare its session, calibrate on the calibration samples, run the LoadGen
scenario for each trial between two noise probes with the audit feed slipping its probes in, then judge:
the output check and the quality gate on outputs captured across the whole run, the repeat audit on the
seen/never-seen pairs, the post-run audits on samples of another seed, and the precision audit. The
status follows the audits (``accelbench.audits.status``). Any exception becomes a status
(``unavailable``, ``unsupported``, ``oom``, ``crashed``); a hard crash (signal) is observed by the parent.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import secrets
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from accelbench import audits, variants
from accelbench.audits import feed as feed_module
from accelbench.audits import output as output_audit
from accelbench.audits import post_run, precision, repeat
from accelbench.cellspec import CellSpec, write_json_atomic
from accelbench.errors import CellError, Unavailable
from accelbench.hardware.detect import detect_machine
from accelbench.meters import energy, memory, noise
from accelbench.registry import instantiate
from accelbench.results import DeviceMemory, Energy, Quality
from accelbench.scenarios.loadgen import Measurement, calibrate, measure
from accelbench.scenarios.rules import Rules, get_rules
from accelbench.stacks.base import CellContext, ModelSpec, Session, Stack
from accelbench.versions import with_python
from accelbench.workloads.base import Inputs, Variant, Workload

log = logging.getLogger(__name__)

CALIBRATION_SAMPLES = 8
"""Samples of warm-up and calibration, drawn after the timed pool (never timed)."""


def main(argv: Sequence[str]) -> int:
    """Entry point: measure the cell described by the spec file ``argv[0]``."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    spec = CellSpec.from_dict(json.loads(Path(argv[0]).read_text()))
    outcome = outcome_of(spec)
    outcome["peak_rss_bytes"] = memory.peak_rss_bytes()
    write_json_atomic(Path(spec.result_path), outcome)
    return 0


def outcome_of(spec: CellSpec) -> dict[str, Any]:
    """The outcome document of the cell; exceptions are turned into statuses."""
    try:
        return _measure(spec)
    except CellError as err:
        return {"status": err.status, "reason": str(err)}
    except MemoryError:
        traceback.print_exc()
        return {"status": "oom", "reason": "MemoryError in the cell process"}
    except Exception as err:
        traceback.print_exc()
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        return {"status": "crashed", "reason": f"{type(err).__name__}: {first}"[:500]}


def _measure(spec: CellSpec) -> dict[str, Any]:
    if spec.cell.scenario == "train-to-quality":  # accelbench.training runs MLPerf Training's scenario
        from accelbench.training.measure import measure as measure_training

        return measure_training(spec)
    stack: Stack = instantiate(spec.stack_ref)
    reason = stack.unavailable_reason(spec.cell.device)
    if reason:
        raise Unavailable(reason)
    workload: Workload = instantiate(spec.workload_ref)
    _set_torch_threads(spec.threads)
    drawn = variants.resolve(workload, spec.cell.size, spec.cell.variant)
    variant = drawn.variant if drawn else None
    # the null stack never looks at the model: skip building it, so it measures the harness alone
    model = variants.build_model(workload, spec.cell.size, spec.seed, variant) if stack.computes else None
    sets = _SampleSets(workload, spec, variant)
    reference_model = copy.deepcopy(model)
    session = stack.prepare(model, _model_spec(spec, workload, sets.calibration[0]), _context(spec))  # type: ignore[arg-type]
    rules = get_rules(spec.rules)
    feed = sets.feed(rules) if stack.computes else None
    trials, probe, metered = _timed_trials(spec, session, sets, rules, feed)
    sanity = _sanity(stack, workload, spec.cell.size, session, variant)
    outcome = _outcome(spec, stack, session, rules, trials, probe, metered)
    judged = _judge(spec, stack, workload, session, reference_model, sets, feed, rules)
    failures = [q.metric for q in (judged.quality, sanity) if q is not None and not q.passed]
    status, why = audits.cell_status(
        judged.verdicts, failures, _invalid_reasons(stack, trials), noise.unstable_reason(probe)
    )
    outcome.update(status=status, reason=why, quality=_asdict(judged.quality), sanity=_asdict(sanity))
    outcome["audit"] = judged.section
    outcome["warnings"] = sorted({*outcome["warnings"], *audits.audit_warnings(judged.section)})
    outcome["variant_info"] = variants.variant_info(drawn) if drawn else None
    return outcome


class _SampleSets:
    """The cell's disjoint sample sets: timed pool, calibration, audit (indices in that order)."""

    def __init__(self, workload: Workload, spec: CellSpec, variant: Variant | None) -> None:
        self.workload, self.spec, self.variant = workload, spec, variant
        self.pool_size = max(spec.samples, workload.performance_sample_count)
        self.timed = [self._make(i) for i in range(self.pool_size)]
        self.calibration = [self._make(self.pool_size + i) for i in range(CALIBRATION_SAMPLES)]

    def feed(self, rules: Rules) -> audits.AuditFeed:
        """The audit feed over the timed pool, with audit samples after the calibration ones."""
        first_audit = self.pool_size + CALIBRATION_SAMPLES
        per_trial = math.ceil(rules.output_checks / rules.trials)
        pairs = math.ceil(feed_module.PAIRS / rules.trials)
        seed = secrets.randbits(63)
        return audits.AuditFeed(self.timed, lambda k: self._make(first_audit + k), per_trial, seed, pairs)

    def _make(self, index: int) -> Inputs:
        return variants.make_sample(self.workload, self.spec.cell.size, self.spec.seed, index, self.variant)


def _model_spec(spec: CellSpec, workload: Workload, example: Inputs) -> ModelSpec:
    return ModelSpec(
        workload=spec.cell.workload,
        size=spec.cell.size,
        seed=spec.seed,
        variant=spec.cell.variant,
        input_names=workload.input_names(),
        example=example,
    )


def _context(spec: CellSpec) -> CellContext:
    return CellContext(
        device=spec.cell.device,
        threads=spec.threads,
        work_dir=Path(spec.cell_dir),
        cache_dir=Path(spec.cache_dir),
    )


def _set_torch_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def _timed_trials(
    spec: CellSpec, session: Session, sets: _SampleSets, rules: Rules, feed: audits.AuditFeed | None
) -> tuple[list[Measurement], Any, _Metered]:
    """Calibrate, then run ``rules.trials`` LoadGen tests between two noise probes; retry if unstable.

    Calibration (and its warm-up) runs on its own samples, never on the timed pool. One energy window
    and one device-memory window span the trials of an attempt (probes excluded).
    """
    latency_s = calibrate(session.infer, sets.calibration, rules.calibration_budget_s)
    meters = _Meters(spec.cell.device)
    attempts = 2  # an unstable attempt is measured once more
    try:
        for attempt in range(attempts):
            start = noise.begin()
            meters.begin(f"a{attempt}")
            trials = [
                _one_trial(spec, session, sets.timed, rules, latency_s, f"a{attempt}-t{trial}", feed)
                for trial in range(rules.trials)
            ]
            metered = meters.end(f"a{attempt}", sum(len(t.sut_latencies_s) for t in trials))
            probe = noise.end(start)
            if not probe.unstable:
                break
    finally:
        meters.close()
    return trials, probe, metered


@dataclass(frozen=True, slots=True)
class _Metered:
    energy: Energy | None
    device_memory: DeviceMemory | None
    warnings: tuple[str, ...] = ()


class _Meters:
    """The energy meter (``energy.choose_meter``) and the device-memory meter of the cell."""

    def __init__(self, device: str):
        self.memory = memory.DeviceMemoryMeter(device)
        self.energy: energy.EnergyMeter | None = None
        self.missing = ""
        try:
            self.energy = energy.choose_meter(detect_machine(probe_gpus=False), device)
        except energy.MeterUnavailable as err:
            self.missing = f"energy unavailable: {err}"

    def begin(self, window: str) -> None:
        self.memory.begin_window(window)
        if self.energy is not None:
            self.energy.begin_window(window)

    def end(self, window: str, samples: int) -> _Metered:
        reading = self.energy.end_window(window) if self.energy is not None else None
        record = energy.energy_record(reading, samples) if reading is not None else None
        notes = (self.missing,) if self.missing else ()
        return _Metered(record, self.memory.end_window(window), notes)

    def close(self) -> None:
        if self.energy is not None:
            self.energy.close()


def _one_trial(
    spec: CellSpec,
    session: Session,
    samples: list[Inputs],
    rules: Rules,
    latency_s: float,
    name: str,
    feed: audits.AuditFeed | None,
) -> Measurement:
    log_dir = Path(spec.cell_dir) / "loadgen" / name
    return measure(spec.cell.scenario, session.infer, samples, rules, log_dir, latency_s=latency_s, feed=feed)


@dataclass(frozen=True, slots=True)
class _Judged:
    """The verdicts of every audit, the quality gate over the run's checks, and the stored section."""

    verdicts: tuple[audits.Verdict, ...]
    quality: Quality | None
    section: dict[str, Any] | None


def _judge(
    spec: CellSpec,
    stack: Stack,
    workload: Workload,
    session: Session,
    reference_model: Any,
    sets: _SampleSets,
    feed: audits.AuditFeed | None,
    rules: Rules,
) -> _Judged:
    """Output check and quality gate over the whole run, repeat audit, post-run audits, precision."""
    from accelbench.meters.quality import compare

    if not stack.computes or feed is None:
        why = "outputs are not the model's (the stack declares computes = False): nothing vouches for them"
        return _Judged((audits.Verdict("output", audits.INCONCLUSIVE, why),), None, None)
    reference = _reference(reference_model)
    checks = output_audit.chosen_checks(feed.checks, rules.output_checks)
    refs = {origin: reference(feed.audit_input(origin)) for origin in sorted({c.origin for c in checks})}
    checked_refs, checked_outs = [refs[c.origin] for c in checks], [c.output for c in checks]
    quality = compare(workload.quality_metric, checked_refs, checked_outs, session.effective_precision)
    seed = spec.seed + post_run.ALTERNATE_SEED_OFFSET
    fresh = [
        variants.make_sample(workload, spec.cell.size, seed, i, sets.variant)
        for i in range(post_run.samples_needed())
    ]
    after = post_run.post_run_audits(
        session.infer, reference, fresh, workload.quality_metric, session.effective_precision, seed
    )
    error = precision.max_normalised_error(
        [*checked_refs, *after.references], [*checked_outs, *after.outputs]
    )
    verdicts = (
        output_audit.output_verdict(checks, refs),
        repeat.repeat_verdict(feed.pairs, seed=feed.seed),
        after.caching,
        after.alternate_seed,
        precision.precision_verdict(
            session.effective_precision, error, len(checked_outs) + len(after.outputs)
        ),
    )
    extra = {"feed_seed": feed.seed, "timed_pool": sets.pool_size, "post_run_s": after.elapsed_s}
    return _Judged(verdicts, quality, audits.section(verdicts, **extra))


def _reference(model: Any) -> Callable[[Inputs], np.ndarray]:
    """The fp32 eager reference as a function of one sample's inputs."""
    import torch

    def run(sample: Inputs) -> np.ndarray:
        with torch.inference_mode():
            return np.asarray(model(*(torch.from_numpy(a) for a in sample)).float().numpy())

    return run


def _sanity(
    stack: Stack, workload: Workload, size: str, session: Session, variant: Variant | None
) -> Quality | None:
    from accelbench.meters.quality import sanity_quality

    if not stack.computes:
        return None
    if variant is None:  # workloads written before variants take no variant argument
        verdict = workload.sanity_check(size, session.infer)
    else:
        verdict = workload.sanity_check(size, session.infer, variant)
    return sanity_quality(verdict) if verdict else None


def _outcome(
    spec: CellSpec,
    stack: Stack,
    session: Session,
    rules: Rules,
    trials: list[Measurement],
    probe: Any,
    metered: _Metered,
) -> dict[str, Any]:
    """The measured part of the outcome; status, quality and audits are added once judged."""
    from accelbench import stats

    ranked = sorted(trials, key=_trial_p50_s)
    median_trial = ranked[len(ranked) // 2]
    log_rel = str(Path(spec.cell_dir).relative_to(spec.run_dir) / "loadgen")
    return {
        "latency": _asdict(stats.summarize_latencies([s for t in trials for s in t.sut_latencies_s])),
        "loadgen": _asdict(median_trial.to_verdict(rules, log_rel)),
        "trial_p50_s": [_trial_p50_s(t) for t in trials],
        "effective_precision": session.effective_precision,
        "compile_s": session.compile_s,
        "noise": _asdict(probe),
        "warnings": sorted({*_warnings(trials, probe, stack), *metered.warnings}),
        "versions": {**_base_versions(), **stack.versions()},
        "settings": _settings(spec, session, median_trial),
        "energy": _asdict(metered.energy),
        "device_memory": _asdict(metered.device_memory),
    }


def _trial_p50_s(trial: Measurement) -> float:
    return float(np.median(trial.sut_latencies_s))


def _invalid_reasons(stack: Stack, trials: list[Measurement]) -> list[str]:
    """LoadGen's reasons for every INVALID trial (a trial without reasons still counts)."""
    expected = " (expected for the null stack)" if not stack.computes else ""
    return [
        f"trial {number}{expected}: {'; '.join(t.summary.invalid_reasons) or 'no reason given'}"
        for number, t in enumerate(trials)
        if not t.summary.valid
    ]


def _warnings(trials: list[Measurement], probe: Any, stack: Stack) -> list[str]:
    # a no-op outruns the queries LoadGen pre-generates, so the null stack is INVALID by design
    expected = " (expected for the null stack)" if not stack.computes else ""
    notes = [
        f"LoadGen INVALID{expected}: {'; '.join(t.summary.invalid_reasons)}"
        for t in trials
        if not t.summary.valid
    ]
    if probe.other_load_cores > noise.OTHER_LOAD_WARNING_CORES:
        notes.append(f"machine busy: other processes used {probe.other_load_cores:.2f} cores meanwhile")
    if not stack.computes:
        notes.append("null stack: measures harness overhead only; outputs are not checked")
    return sorted(set(notes))


def _settings(spec: CellSpec, session: Session, trial: Measurement) -> dict[str, Any]:
    return {
        "threads": spec.threads,
        "rules": spec.rules,
        "seed": spec.seed,
        "samples": spec.samples,
        "batch_size": 1,
        "calibrated_latency_s": trial.calibrated_latency_s,
        "loadgen": dict(trial.settings),
        "stack": dict(session.details),
    }


def _base_versions() -> dict[str, str]:
    return with_python(("accelbench", "numpy", "torch", "mlcommons-loadgen"))


def _asdict(record: Any) -> Any:
    import dataclasses

    return dataclasses.asdict(record) if record is not None else None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
