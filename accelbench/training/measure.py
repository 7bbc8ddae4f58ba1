"""The cell of a ``train-to-quality`` scenario: N timed runs (and a 1-process baseline when ``nproc`` > 1).

``measure(spec)`` returns the cell's ``Outcome`` (``accelbench.outcome``): its body, ``TrainingBody``,
has ``latency`` and ``loadgen`` null and a ``training`` section (a plain JSON mapping, results schema 3):
runs [{seed, time_to_quality_s, converged, quality, epochs, samples, energy_j}], olympic_mean_s,
runs_converged, target, quality_reached, nproc, samples_per_s_per_process, scaling_efficiency,
energy_j (mean energy to train over the runs the olympic mean keeps), the 1-process baseline and where
the MLPerf logs are, the training ``rules`` (``accelbench.training.rules``: ``short``, never MLPerf's), and
the ``precision`` the stack declared with torch's TF32 settings read back (``accelbench.training.precision``),
also the result's ``effective_precision``. The status is ``ok`` when the olympic mean exists, else
``quality_failed``; ``unstable`` when the noise guard (``accelbench.meters.noise``, over the timed runs,
not the baseline) saw other load or steal past its limits. A training cell has no series of samples to
corroborate the reference probe's drift, so a drift alone is a warning (``noise.drift_as_warning``).

``runs`` and ``nproc`` come from the cell's ``TrainingSettings`` (``RunConfig.runs`` / ``RunConfig.nproc``).
"""

from __future__ import annotations

import dataclasses
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelbench.cellspec import CellSpec
from accelbench.errors import Unsupported
from accelbench.head import Energy, Head, NoiseProbe, Quality
from accelbench.meters import noise
from accelbench.meters.window import combined_energy
from accelbench.outcome import Outcome
from accelbench.registry import instantiate
from accelbench.sections import TrainingFigures
from accelbench.settings import expect
from accelbench.training import rules, summary
from accelbench.training.body import TrainingBody
from accelbench.training.distributed import GroupOutcome, Job, run_group
from accelbench.training.loop import RunRecord, check_stack
from accelbench.training.settings import TrainingSettings
from accelbench.training.workloads import TrainingWorkload
from accelbench.versions import with_python


def measure(spec: CellSpec) -> Outcome:
    """Train the cell's workload to its target ``runs`` times and summarise (see the module docstring)."""
    workload = instantiate(spec.refs.workload)
    if not isinstance(workload, TrainingWorkload):
        raise Unsupported(f"{spec.cell.workload} is not a training workload")
    check_stack(spec.cell.stack)
    training_rules = rules.for_run(spec.rules)
    settings = expect(spec.settings, TrainingSettings)
    runs, nproc = settings.runs, settings.nproc
    data = workload.dataset(spec.cell.size)
    threads = _threads(workload, spec, nproc)
    seeds = tuple(spec.seed + index for index in range(runs))
    job = Job(
        workload=workload,
        size=spec.cell.size,
        data=data,
        stack=spec.cell.stack,
        device=spec.cell.device,
        seeds=seeds,
        log_dir=str(Path(spec.folders.cell_dir) / "mllog"),
        platform=_platform(spec),
        threads=threads,
    )
    guard = noise.begin(spec.noise_floor)
    main = run_group(job, nproc)
    probe, notes = noise.drift_as_warning(noise.end(guard))
    baseline = None
    if nproc > 1:
        baseline = run_group(
            dataclasses.replace(job, log_dir=str(Path(spec.folders.cell_dir) / "mllog-nproc1")), 1
        )
    guarded = _Guarded(main, probe, tuple(notes))
    return _outcome(spec, workload, guarded, baseline, nproc, threads, training_rules)


@dataclass(frozen=True, slots=True)
class _Guarded:
    """The timed runs with the noise guard's verdict over them (not over the 1-process baseline)."""

    main: GroupOutcome
    probe: NoiseProbe
    notes: tuple[str, ...]


def _threads(workload: TrainingWorkload, spec: CellSpec, nproc: int) -> int:
    per_process = max(1, spec.threads // nproc)
    cap = workload.recipe(spec.cell.size).threads_cap
    return min(per_process, cap) if cap else per_process


def _platform(spec: CellSpec) -> str:
    return f"{platform.node() or 'host'} {spec.cell.device} {spec.cell.stack}"


def _outcome(
    spec: CellSpec,
    workload: TrainingWorkload,
    guarded: _Guarded,
    baseline: GroupOutcome | None,
    nproc: int,
    threads: int,
    training_rules: rules.TrainingRules,
) -> Outcome:
    main, probe = guarded.main, guarded.probe
    target = workload.recipe(spec.cell.size).target
    section = {**training_section(main, baseline, nproc, target, spec), **_honesty(main, training_rules)}
    figures = TrainingFigures.from_dict(section)
    passed = figures.olympic_mean_s is not None
    converged = figures.runs_converged
    reason = "" if passed else f"{converged} of {len(main.runs)} runs reached top-1 {target}: no olympic mean"
    status = "ok" if passed else "quality_failed"
    if passed and probe.unstable:
        status, reason = "unstable", noise.unstable_reason(probe)
    head = Head(
        status=status,
        reason=reason,
        quality=_quality(main.runs, target, workload, spec),
        effective_precision=main.precision.name,
        compile_s=main.compile_s,
        energy=total_energy(main.runs),
        noise=probe,
        warnings=(*_warnings(main, baseline), *guarded.notes, *noise.guard_warnings(probe)),
        versions=_versions(),
        settings=_settings(spec, workload, nproc, threads),
    )
    return Outcome(head, TrainingBody(figures))


def training_section(
    main: GroupOutcome, baseline: GroupOutcome | None, nproc: int, target: float, spec: CellSpec
) -> dict[str, Any]:
    """The result's ``training`` mapping (see the module docstring)."""
    per_process = summary.samples_per_s_per_process(main.runs, nproc)
    base = _group_section(baseline, 1) if baseline is not None else None
    efficiency = summary.scaling_efficiency(per_process, base["samples_per_s_per_process"]) if base else None
    olympic = summary.olympic_mean_s(main.runs)
    return {
        "runs": [_run_dict(r, spec) for r in main.runs],
        "olympic_mean_s": olympic,
        "runs_converged": sum(r.converged for r in main.runs),
        "target": target,
        "quality_metric": "top1 on the held-out set",
        "quality_reached": max((r.quality for r in main.runs), default=0.0),
        "nproc": nproc,
        "samples_per_s_per_process": per_process,
        "scaling_efficiency": efficiency,
        "scaling_basis": "samples/s per process with nproc processes / samples/s of 1 process with the "
        "same threads, same cell"
        if base
        else "nproc = 1: not measured",
        "time_to_quality_speedup": (base["olympic_mean_s"] / olympic)
        if base and olympic and base["olympic_mean_s"]
        else None,
        "energy_j": kept_energy_j(main.runs),
        "baseline_nproc1": base,
        "mllog_dir": str((Path(spec.folders.cell_dir) / "mllog").relative_to(spec.folders.run_dir)),
        "timing": "MLPerf run_start to run_stop, evaluation included, warm-up and compilation excluded",
    }


def _honesty(main: GroupOutcome, training_rules: rules.TrainingRules) -> dict[str, Any]:
    """The rule set the cell ran under and the precision its stack declared (as torch had it)."""
    return {
        "rules": training_rules.name,
        "rules_summary": training_rules.summary,
        "precision": dataclasses.asdict(main.precision),
    }


def _group_section(group: GroupOutcome, processes: int) -> dict[str, Any]:
    return {
        "olympic_mean_s": summary.olympic_mean_s(group.runs),
        "runs_converged": sum(r.converged for r in group.runs),
        "samples_per_s_per_process": summary.samples_per_s_per_process(group.runs, processes),
        "time_to_quality_s": [r.time_to_quality_s for r in group.runs],
    }


def _run_dict(run: RunRecord, spec: CellSpec) -> dict[str, Any]:
    return {
        "seed": run.seed,
        "time_to_quality_s": run.time_to_quality_s,
        "converged": run.converged,
        "quality": run.quality,
        "epochs": run.epochs,
        "samples": run.samples,
        "energy_j": run.energy.energy_j if run.energy else None,
        "log_file": str(Path(run.log_file).relative_to(spec.folders.run_dir)) if run.log_file else "",
    }


def kept_energy_j(runs: tuple[RunRecord, ...]) -> float | None:
    """Mean energy to train over the runs the olympic mean keeps (None without a meter or a mean)."""
    if summary.olympic_mean_s(runs) is None or any(r.energy is None for r in runs):
        return None
    ranked = sorted(runs, key=lambda r: r.time_to_quality_s if r.converged else float("inf"))
    kept = ranked[1:-1] if len(ranked) >= 3 else ranked
    return sum(r.energy.energy_j for r in kept if r.energy) / len(kept)


def total_energy(runs: tuple[RunRecord, ...]) -> Energy | None:
    """One Energy record over all run windows together (energy per query = per training sample)."""
    return combined_energy([r.energy for r in runs], "run windows (run_start to run_stop)")


def _quality(
    runs: tuple[RunRecord, ...], target: float, workload: TrainingWorkload, spec: CellSpec
) -> Quality:
    converged = sum(r.converged for r in runs)
    passed = summary.olympic_mean_s(runs) is not None
    return Quality(
        metric="top1-held-out",
        value=max((r.quality for r in runs), default=0.0),
        threshold=target,
        passed=passed,
        samples_checked=workload.dataset(spec.cell.size).eval_samples,
        detail=f"{converged}/{len(runs)} runs reached the target",
    )


def _warnings(main: GroupOutcome, baseline: GroupOutcome | None) -> list[str]:
    notes = [f"unconverged: seed {r.seed} stopped at {r.epochs} epochs" for r in main.runs if not r.converged]
    if len(main.runs) < 3:
        notes.append(f"only {len(main.runs)} run(s): the olympic mean drops nothing")
    if main.energy_note:
        notes.append(main.energy_note)
    return sorted(set(notes))


def _settings(spec: CellSpec, workload: TrainingWorkload, nproc: int, threads: int) -> dict[str, Any]:
    return {
        "threads": spec.threads,
        "threads_per_process": threads,
        "seed": spec.seed,
        "nproc": nproc,
        "recipe": dataclasses.asdict(workload.recipe(spec.cell.size)),
        "data": workload.dataset(spec.cell.size).source,
    }


def _versions() -> dict[str, str]:
    return with_python(("accelbench", "torch", "mlperf-logging", "scikit-learn"))
