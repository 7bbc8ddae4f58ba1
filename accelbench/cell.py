"""The cell process: measure one cell in a fresh interpreter and write its outcome as JSON.

Run by the runner as ``python -m accelbench.cell SPEC.json``. Steps: draw the cell's variant (if any),
build the workload's model and samples, keep an fp32 eager copy as the reference, let the stack prepare
its session, calibrate, run the LoadGen scenario for each trial between two noise probes, gate the
outputs captured during the timed runs against the reference, then run the audits (``accelbench.audits``)
on samples from another seed. Any exception becomes a status (``unavailable``, ``unsupported``, ``oom``,
``crashed``) in the outcome; a hard crash (signal) is observed by the parent instead.
"""

from __future__ import annotations

import copy
import json
import logging
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from accelbench import audits, variants
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

CAPTURE_SAMPLES = 16
"""Distinct samples whose outputs are captured during each timed run for the quality gate."""


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
    samples = [
        variants.make_sample(workload, spec.cell.size, spec.seed, i, variant) for i in range(spec.samples)
    ]
    reference_model = copy.deepcopy(model)
    session = stack.prepare(model, _model_spec(spec, workload, samples[0]), _context(spec))  # type: ignore[arg-type]
    rules = get_rules(spec.rules)
    trials, probe, metered = _timed_trials(spec, session, samples, rules)
    quality = _quality_gate(stack, workload, session, reference_model, samples, trials)
    sanity = _sanity(stack, workload, spec.cell.size, session, variant)
    outcome = _outcome(spec, stack, session, rules, trials, probe, quality, sanity, metered)
    audit = _audit(spec, stack, workload, session, reference_model, variant)
    outcome["audit"] = audit
    outcome["warnings"] = sorted({*outcome["warnings"], *(audits.audit_warnings(audit) if audit else ())})
    outcome["variant_info"] = variants.variant_info(drawn) if drawn else None
    return outcome


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
    spec: CellSpec, session: Session, samples: list[Inputs], rules: Rules
) -> tuple[list[Measurement], Any, _Metered]:
    """Calibrate, then run ``rules.trials`` LoadGen tests between two noise probes; retry if unstable.

    One energy window and one device-memory window span the trials of an attempt (probes excluded).
    """
    latency_s = calibrate(session.infer, samples, rules.calibration_budget_s)
    meters = _Meters(spec.cell.device)
    attempts = 1 if rules.name == "quick" else 2
    try:
        for attempt in range(attempts):
            start = noise.begin()
            meters.begin(f"a{attempt}")
            trials = [
                _one_trial(spec, session, samples, rules, latency_s, f"a{attempt}-t{trial}")
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
    spec: CellSpec, session: Session, samples: list[Inputs], rules: Rules, latency_s: float, name: str
) -> Measurement:
    log_dir = Path(spec.cell_dir) / "loadgen" / name
    return measure(
        spec.cell.scenario,
        session.infer,
        samples,
        rules,
        log_dir,
        capture=CAPTURE_SAMPLES,
        latency_s=latency_s,
    )


def _quality_gate(
    stack: Stack,
    workload: Workload,
    session: Session,
    reference_model: Any,
    samples: list[Inputs],
    trials: list[Measurement],
) -> Quality | None:
    """Outputs captured during the timed runs vs the fp32 eager reference (None for the null stack)."""
    from accelbench.meters.quality import compare

    if not stack.computes:
        return None
    captured = [(index, output) for trial in trials for index, output in trial.outputs.items()]
    reference = _reference_outputs(reference_model, samples, {index for index, _ in captured})
    refs = [reference[index] for index, _ in captured]
    outs = [output for _, output in captured]
    return compare(workload.quality_metric, refs, outs, session.effective_precision)


def _reference_outputs(model: Any, samples: list[Inputs], indices: set[int]) -> dict[int, np.ndarray]:
    import torch

    with torch.inference_mode():
        return {
            index: model(*(torch.from_numpy(a) for a in samples[index])).float().numpy()
            for index in sorted(indices)
        }


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


def _audit(
    spec: CellSpec,
    stack: Stack,
    workload: Workload,
    session: Session,
    reference_model: Any,
    variant: Variant | None,
) -> dict[str, Any] | None:
    """The audits on samples of another seed (None for the null stack, whose outputs are not checked)."""
    import torch

    if not stack.computes:
        return None
    seed = spec.seed + audits.ALTERNATE_SEED_OFFSET
    size = spec.cell.size
    fresh = [variants.make_sample(workload, size, seed, i, variant) for i in range(audits.samples_needed())]

    def reference(sample: Inputs) -> np.ndarray:
        with torch.inference_mode():
            return np.asarray(reference_model(*(torch.from_numpy(a) for a in sample)).float().numpy())

    precision = session.effective_precision
    return audits.audit_section(session.infer, reference, fresh, workload.quality_metric, precision, seed)


def _outcome(
    spec: CellSpec,
    stack: Stack,
    session: Session,
    rules: Rules,
    trials: list[Measurement],
    probe: Any,
    quality: Quality | None,
    sanity: Quality | None,
    metered: _Metered,
) -> dict[str, Any]:
    from accelbench import stats

    ranked = sorted(trials, key=_trial_p50_s)
    median_trial = ranked[len(ranked) // 2]
    log_rel = str(Path(spec.cell_dir).relative_to(spec.run_dir) / "loadgen")
    failed = [q.metric for q in (quality, sanity) if q is not None and not q.passed]
    return {
        "status": "quality_failed" if failed else "ok",
        "reason": f"quality gate failed: {', '.join(failed)}" if failed else "",
        "latency": _asdict(stats.summarize_latencies([s for t in trials for s in t.sut_latencies_s])),
        "loadgen": _asdict(median_trial.to_verdict(rules, log_rel)),
        "trial_p50_s": [_trial_p50_s(t) for t in trials],
        "quality": _asdict(quality),
        "sanity": _asdict(sanity),
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


def _warnings(trials: list[Measurement], probe: Any, stack: Stack) -> list[str]:
    # a no-op outruns the queries LoadGen pre-generates, so the null stack is INVALID by design
    expected = " (expected for the null stack)" if not stack.computes else ""
    notes = [
        f"LoadGen INVALID{expected}: {'; '.join(t.summary.invalid_reasons)}"
        for t in trials
        if not t.summary.valid
    ]
    if probe.unstable:
        notes.append(f"unstable: reference probe drifted {probe.drift:.0%} during the measurement")
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
