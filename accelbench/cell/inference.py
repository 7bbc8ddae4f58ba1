"""The LoadGen scenarios' driver: measure one inference cell in the cell process.

The rule set's trials run one after the other between two noise probes, each in a fresh process
(``accelbench.cell.trial``: build the model and the disjoint sample sets, prepare the stack's session,
calibrate, run the LoadGen scenario with the audit feed slipping its probes in); an attempt the noise
guard judges disturbed (``accelbench.meters.noise``) measures them once more. Then the cell judges the
evidence of every trial together: the output check and the quality gate on the outputs captured across
all trials, the repeat audit on their seen/never-seen pairs, the post-run audits of the last trial, the
precision audit, and LoadGen's figures (``accelbench.scenarios.figures``) with the SUT timer's
agreement. The status follows the audits
(``accelbench.audits.status``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from accelbench import audits, variants
from accelbench.audit_section import AuditSection
from accelbench.audits import off_calls, precision, repeat
from accelbench.audits import output as output_audit
from accelbench.cell import trial
from accelbench.cell.loadgen_body import LoadgenBody
from accelbench.cell.loadgen_settings import loadgen_settings
from accelbench.cellspec import CellSpec
from accelbench.head import Head, NoiseProbe, Quality
from accelbench.loadgen_figures import Figures
from accelbench.meters import noise
from accelbench.meters.quality import failure
from accelbench.meters.window import combined_energy, max_memory
from accelbench.outcome import Outcome
from accelbench.registry import instantiate
from accelbench.scenarios import figures, server_search
from accelbench.scenarios.loadgen import Measurement
from accelbench.scenarios.rules import Rules, get_rules
from accelbench.sections import VariantInfo
from accelbench.versions import with_python
from accelbench.workloads.base import Workload

log = logging.getLogger(__name__)


ATTEMPTS = 2
"""An attempt the noise guard judged disturbed is measured once more."""


def measure(spec: CellSpec) -> Outcome:
    """The outcome of a LoadGen cell: trials, figures, audits, status."""
    workload: Workload = instantiate(spec.refs.workload)
    rules = get_rules(spec.rules)
    retried = ""
    for attempt in range(ATTEMPTS):
        start = noise.begin(spec.noise_floor, loadgen_settings(spec).serve_url)
        evidence, search, discarded = _trials(spec, rules, attempt)
        probe = noise.end(start, [s for e in evidence for s in e.timed.measurement.sut_latencies_s])
        if not noise.worth_retrying(probe) or attempt == ATTEMPTS - 1:
            break
        retried = noise.unstable_reason(probe)
        log.info("%s; measuring it once more", retried)
    probe = dataclasses.replace(probe, retried=retried)
    measurements = [e.timed.measurement for e in evidence]
    found = _figures(evidence, search)
    # rounds discarded by a server back-off are judged too: a stack caught there never ranks
    computes = evidence[0].computes  # the stack's declaration, asked in its SUT process
    judged = _judge(computes, workload, spec.cell.size, [*discarded, *evidence], rules, _sut_cpu(evidence))
    sanity = evidence[-1].sanity
    failures = [failure(q) for q in (judged.quality, sanity) if q is not None and not q.passed]
    drift = noise.unstable_reason(probe)
    disagreement = figures.timer_disagreement(found) if computes else None
    invalid = _invalid_reasons(computes, measurements)
    outside = noise.outside_reason(probe)
    status, why = audits.cell_status(judged.verdicts, failures, invalid, drift or disagreement or "", outside)
    measured = _head(spec, computes, evidence, probe)
    head = dataclasses.replace(
        measured,
        status=status,
        reason=why,
        quality=judged.quality,
        sanity=sanity,
        warnings=tuple(sorted({*measured.warnings, *audits.audit_warnings(judged.section)})),
    )
    drawn = variants.resolve(workload, spec.cell.size, spec.cell.variant)
    info = variants.variant_info(drawn) if drawn else None
    return Outcome(head, _body(spec, rules, evidence, found, search, judged.section, info))


def _trials(
    spec: CellSpec, rules: Rules, attempt: int
) -> tuple[list[trial.Evidence], server_search.Search | None, list[trial.Evidence]]:
    """The rule set's trials of one attempt, each in a fresh process. Trial 0 decides the batch and,
    for server, searches the max QPS; when a scored server trial comes out INVALID at that target,
    every trial runs again one back-off step lower (``server_search.Search.backed_off``). Returns the
    last round's trials, the search, and the trials of the rounds before (for the audits)."""
    first = trial.evidence_of(spec, trial.Plan(0, attempt, last=rules.trials == 1), rules.trials)
    search, evidence, backoff = first.timed.search, [first], 0
    discarded: list[trial.Evidence] = []
    while True:
        target = search.max_qps if search else None
        for number in range(len(evidence), rules.trials):
            last = number == rules.trials - 1
            plan = trial.Plan(
                number=number,
                attempt=attempt,
                last=last,
                batch=first.batch,
                target_qps=target or None,
                backoff=backoff,
            )
            evidence.append(trial.evidence_of(spec, plan, rules.trials))
        failed = [e.timed.measurement.summary for e in evidence if not e.timed.measurement.summary.valid]
        if search is None or not failed or not first.computes or not search.can_back_off:
            return evidence, search, discarded
        summary = failed[0]
        search = search.backed_off(
            server_search.Probe(
                search.max_qps,
                False,
                summary.latency_percentiles_s.get(99.0, 0.0),
                summary.qps,
                summary.invalid_reasons,
            )
        )
        backoff += 1
        log.info("server: a scored trial was INVALID; every trial again at %.1f QPS", search.max_qps)
        discarded, evidence = [*discarded, *evidence], []


def _figures(evidence: Sequence[trial.Evidence], search: server_search.Search | None) -> Figures:
    measurements = [e.timed.measurement for e in evidence]
    if search is None:
        return figures.figures_of(measurements)
    return figures.figures_of(measurements, search.max_qps, search.bracket)


@dataclass(frozen=True, slots=True)
class _Judged:
    """The verdicts of every audit, the quality gate over the run's checks, and the stored section."""

    verdicts: tuple[audits.Verdict, ...]
    quality: Quality | None
    section: AuditSection | None


def _judge(
    computes: bool,
    workload: Workload,
    size: str,
    evidence: Sequence[trial.Evidence],
    rules: Rules,
    sut_cpu: Mapping[str, float],
) -> _Judged:
    """Output check and quality gate over every trial, repeat audit, post-run audits, precision, and
    the SUT process's CPU off its calls."""
    from accelbench.meters.quality import compare, sample_budget

    after, precision_name = evidence[-1].post, evidence[-1].effective_precision
    if not computes or after is None:
        why = "outputs are not the model's (the stack declares computes = False): nothing vouches for them"
        return _Judged((audits.Verdict("output", audits.INCONCLUSIVE, why),), None, None)
    refs = {origin: ref for e in evidence for origin, ref in e.references.items()}
    checks = output_audit.chosen_checks([c for e in evidence for c in e.checks], rules.output_checks)
    checked_refs, checked_outs = [refs[c.origin] for c in checks], [c.output for c in checks]
    budget = sample_budget(precision_name, workload.name, size)
    quality = compare(workload.quality_metric, checked_refs, checked_outs, precision_name, budget)
    errors = precision.normalised_errors([*checked_refs, *after.references], [*checked_outs, *after.outputs])
    seeds = [e.feed_seed for e in evidence]
    verdicts = (
        output_audit.output_verdict(checks, {c.origin: refs[c.origin] for c in checks}),
        repeat.repeat_verdict([p for e in evidence for p in e.pairs], seed=seeds[0]),
        after.caching,
        after.alternate_seed,
        precision.precision_verdict(precision_name, errors),
        *((v,) if (v := off_calls.off_calls_verdict(sut_cpu)) else ()),
    )
    extra = {"feed_seed": seeds, "timed_pool": evidence[0].pool_size, "post_run_s": after.elapsed_s}
    return _Judged(verdicts, quality, audits.section(verdicts, **extra))


def _head(spec: CellSpec, computes: bool, evidence: Sequence[trial.Evidence], probe: NoiseProbe) -> Head:
    """The measured part of the head; status, quality and the audits' warnings are added once judged."""
    trials = [e.timed.measurement for e in evidence]
    first, metered = evidence[0], [e.timed.metered for e in evidence]
    return Head(
        status="ok",
        effective_precision=first.effective_precision,
        compile_s=first.compile_s,
        peak_rss_bytes=max(e.peak_rss_bytes for e in evidence),
        noise=probe,
        energy=combined_energy([m.energy for m in metered]),
        device_memory=max_memory([m.device_memory for m in metered]),
        warnings=tuple(
            sorted({*_warnings(trials, probe, computes), *(w for m in metered for w in m.warnings)})
        ),
        versions={**_base_versions(), **first.versions},
        settings={**_settings(spec, first, _median_trial(trials)), "sut_process": _sut_cpu(evidence)},
    )


def _body(
    spec: CellSpec,
    rules: Rules,
    evidence: Sequence[trial.Evidence],
    found: Figures,
    search: server_search.Search | None,
    audit: AuditSection | None,
    variant_info: VariantInfo | None,
) -> LoadgenBody:
    from accelbench import stats

    trials = [e.timed.measurement for e in evidence]
    log_rel = str(Path(spec.folders.cell_dir).relative_to(spec.folders.run_dir) / "loadgen")
    return LoadgenBody(
        latency=stats.summarize_latencies([s for t in trials for s in t.sut_latencies_s]),
        loadgen=_median_trial(trials).to_verdict(rules, log_rel),
        figures=found,
        trial_p50_s=tuple(_trial_p50_s(t) for t in trials),
        server_search=search.record() if search else None,
        audit=audit,
        variant_info=variant_info,
    )


def _median_trial(trials: Sequence[Measurement]) -> Measurement:
    return sorted(trials, key=_trial_p50_s)[len(trials) // 2]


def _trial_p50_s(trial: Measurement) -> float:
    return float(np.median(trial.sut_latencies_s))


def _invalid_reasons(computes: bool, trials: Sequence[Measurement]) -> list[str]:
    """LoadGen's reasons for every INVALID trial (a trial without reasons still counts)."""
    expected = " (expected for the null stack)" if not computes else ""
    return [
        f"trial {number}{expected}: {'; '.join(t.summary.invalid_reasons) or 'no reason given'}"
        for number, t in enumerate(trials)
        if not t.summary.valid
    ]


def _warnings(trials: Sequence[Measurement], probe: NoiseProbe, computes: bool) -> list[str]:
    # a no-op outruns the queries LoadGen pre-generates, so the null stack is INVALID by design
    expected = " (expected for the null stack)" if not computes else ""
    notes = [
        f"LoadGen INVALID{expected}: {'; '.join(t.summary.invalid_reasons)}"
        for t in trials
        if not t.summary.valid
    ]
    notes.extend(noise.guard_warnings(probe))
    if not computes:
        notes.append("null stack: measures harness overhead only; outputs are not checked")
    return sorted(set(notes))


def _settings(spec: CellSpec, first: trial.Evidence, measured: Measurement) -> dict[str, Any]:
    return {
        "threads": spec.threads,
        "rules": spec.rules,
        "seed": spec.seed,
        "samples": spec.samples,
        "batch_size": measured.batch,
        "batch_sweep": first.swept,
        "trials_in_fresh_processes": get_rules(spec.rules).trials > 1,
        "calibrated_latency_s": measured.calibrated_latency_s,
        "loadgen": dict(measured.settings),
        "stack": dict(first.details),
    }


def _sut_cpu(evidence: Sequence[trial.Evidence]) -> dict[str, float]:
    """The SUT process's CPU over the timed windows of every trial: all of it, inside the calls, and
    between them (work the stack did while the harness was not waiting on it)."""
    used = [e.sut_cpu for e in evidence if e.sut_cpu is not None]
    if not used:  # a served session: its calls overlap
        return {}
    cpu_s, in_calls_s = sum(u.cpu_s for u in used), sum(u.in_calls_s for u in used)
    return {"cpu_s": cpu_s, "in_calls_s": in_calls_s, "off_calls_s": max(0.0, cpu_s - in_calls_s)}


def _base_versions() -> dict[str, str]:
    return with_python(("accelbench", "numpy", "torch", "mlcommons-loadgen"))
