"""``accelbench verify``: check a bundle's hashes and signature, then derive every claim again.

Nothing a result document says is taken on trust: the figures are computed from the LoadGen logs
(``accelbench.bundle.rederive``), each audit's verdict from its evidence and the status from those verdicts
(``accelbench.bundle.rejudge``), the machine fingerprint from the detected facts; each is compared with what
the document claims. The hashes catch an edit made without re-hashing; a re-hashed edit is caught by the
derivation (or, for a signed bundle, by the signature).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from accelbench import registry
from accelbench.audit_section import AuditEntry
from accelbench.audits.verdict import INCONCLUSIVE, Verdict
from accelbench.bundle import identity, ladder, members, rederive, rejudge, search, served, signing
from accelbench.bundle.archive import MANIFEST, SIGNATURE, Archive, parse_manifest, sha256_hex
from accelbench.bundle.fields import claimed_rules, served_curve, stored
from accelbench.bundle.identity import Stored
from accelbench.bundle.members import Header, MachineFile, RunFile, VersionsFile
from accelbench.errors import UserError, first_line
from accelbench.files import json_text
from accelbench.results import Result
from accelbench.scenarios.rules import RULES
from accelbench.session_figures import SessionFigures

BUNDLE = "bundle"
NOT_CHECKED = "not checked"


@dataclass(frozen=True, slots=True)
class Finding:
    """One claim checked: where (``bundle`` or a cell key), what, whether it matched, and the numbers."""

    where: str
    check: str
    matched: bool | None
    """None: nothing to derive it from (said, never counted as a match)."""
    detail: str


@dataclass(frozen=True, slots=True)
class Verification:
    """Every finding of one bundle."""

    run_id: str
    signed: bool
    findings: tuple[Finding, ...]

    @property
    def passed(self) -> bool:
        """Every checked claim matched."""
        return all(f.matched is not False for f in self.findings)


def verify(archive: Archive, trusted: str | None = None) -> Verification:
    """Check ``archive`` as the module text says (``trusted``: an OpenSSH public key line it must carry)."""
    findings = _integrity(archive)
    header = members.header(archive)
    signed = SIGNATURE in archive.files
    findings.append(_signature(archive, header.signed, trusted))
    machine = members.machine_file(archive)
    run = members.run_file(archive)
    findings.append(_fingerprint(machine, run))
    paths = sorted(p for p in archive.files if p.startswith("results/") and p.endswith(".json"))
    loaded = {path: _loaded(archive, path) for path in paths}
    results = [(path, r) for path, r in loaded.items() if isinstance(r, Result)]
    findings += _identity(header, run, machine, results)
    findings += _versions(members.versions_file(archive), results)
    for result in loaded.values():
        if isinstance(result, Finding):
            findings.append(result)  # a document that does not load
        else:
            findings += _cell(archive, result, header, machine.logical_cores)
    return Verification(header.run_id, signed, tuple(findings))


def _loaded(archive: Archive, path: str) -> Result | Finding:
    """The result ``path`` holds, or the ``document`` finding saying why it does not load."""
    try:
        return stored(json_text(archive.files[path], path, finite=False), path)
    except (ValueError, UserError) as exc:
        return Finding(path, "document", False, first_line(exc))


def _identity(header: Header, run: RunFile, machine: MachineFile, results: list[Stored]) -> list[Finding]:
    """The run id, rule set and machine fingerprint every member names (``bundle.identity``)."""
    checks = (
        ("run id", identity.run_id_differences(header, run, results), f"{run.run_id} in every member"),
        (
            "run rules",
            identity.rules_differences(run, results),
            f"run.json {run.rules!r}; no result states another",
        ),
        (
            "cell machines",
            identity.fingerprint_differences(machine, results),
            f"{len(results)} result(s) name their machine's fingerprint",
        ),
    )
    found = []
    for check, diffs, agreed in checks:
        found += [Finding(BUNDLE, check, False, d) for d in diffs] or [Finding(BUNDLE, check, True, agreed)]
    return found


def _versions(written: VersionsFile | None, results: list[Stored]) -> list[Finding]:
    """Each result's versions against ``versions.json``: a difference is a note (the environment that
    wrote the bundle need not be the one that measured: ``bundle.identity``)."""
    if written is None:
        return [Finding(BUNDLE, "versions", None, "no versions.json in the bundle")]
    diffs, compared = identity.version_differences(written, results)
    if diffs:
        why = "versions.json is the environment that wrote the bundle"
        return [Finding(BUNDLE, "versions", None, f"{d} ({why})") for d in diffs]
    return [Finding(BUNDLE, "versions", True, f"{compared} version(s) of the results as in versions.json")]


def _integrity(archive: Archive) -> list[Finding]:
    hashes = parse_manifest(archive.text(MANIFEST))
    held = {p for p in archive.files if p not in (MANIFEST, SIGNATURE)}
    found = [
        Finding(BUNDLE, "manifest", False, f"{p}: not in the MANIFEST") for p in sorted(held - set(hashes))
    ]
    found += [
        Finding(BUNDLE, "manifest", False, f"{p}: in the MANIFEST, not in the bundle")
        for p in sorted(set(hashes) - held)
    ]
    for path in sorted(held & set(hashes)):
        if sha256_hex(archive.files[path]) != hashes[path]:
            found.append(Finding(BUNDLE, "manifest", False, f"{path}: SHA-256 differs from the MANIFEST"))
    if not found:
        found.append(Finding(BUNDLE, "manifest", True, f"{len(held)} files, every SHA-256 as listed"))
    return found


def _signature(archive: Archive, claims_signed: bool, trusted: str | None) -> Finding:
    if SIGNATURE not in archive.files:
        wanted = claims_signed or trusted is not None
        why = "bundle.json says signed, " if claims_signed else ""
        return Finding(BUNDLE, "signature", False if wanted else None, f"{why}UNSIGNED: no SIGNATURE")
    result = signing.check(archive.files[MANIFEST], archive.files[SIGNATURE], trusted)
    return Finding(BUNDLE, "signature", result.valid, result.reason)


def _fingerprint(machine: MachineFile, run: RunFile) -> Finding:
    if machine.machine is None:
        return Finding(BUNDLE, "machine", False, f"machine.json does not load: {machine.problem}")
    derived = machine.machine.fingerprint
    claims = {machine.fingerprint, run.machine_fingerprint}
    matched = claims == {derived}
    return Finding(
        BUNDLE, "machine", matched, f"fingerprint {derived} from the facts; stored {sorted(claims)}"
    )


def _cell(archive: Archive, result: Result, header: Header, cores: int | None) -> list[Finding]:
    key = result.cell.key
    folder = header.folders.get(key)
    computes = _computes(result.cell.stack)
    try:
        found = rederive.derived(archive.files, folder, _batch(result), computes) if folder else None
    except UserError as exc:
        return [Finding(key, "figures", False, str(exc))]
    logs = [] if found is None else [_logs(key, found)]
    findings = [
        *logs,
        _figures(result, found),
        *_rules(result, found),
        *_search(archive, result, folder, found),
    ]
    if served_curve(result):
        findings.append(_curve(archive, result, folder))
    if result.session_ladder is not None:
        findings.append(_ladder(archive, result.cell.key, result.session_ladder, folder))
    entries = _entries(result)
    verdicts = [_judged(name, entry, result) for name, entry in entries]
    for (_, entry), judged in zip(entries, verdicts, strict=True):
        detail = f"{judged.outcome} from its evidence; stored {entry.outcome}"
        findings.append(Finding(key, f"audit {judged.audit}", judged.outcome == entry.outcome, detail))
    if found is None:
        return [*findings, Finding(key, "status", None, f"{result.head.status}: no LoadGen logs to judge")]
    return [*findings, _status(result, found, verdicts or [rejudge.unaudited()], cores, computes)]


def _status(
    result: Result, found: rederive.Derived, verdicts: list[Verdict], cores: int | None, computes: bool
) -> Finding:
    """The cell's status judged again from its verdicts, quality, INVALID trials and noise record."""
    key, head = result.cell.key, result.head
    figures = rederive.with_sut_timer(found.figures, result.figures)
    try:
        unstable = rejudge.unstable_reason(head.noise, figures, cores, computes)
        outside = rejudge.outside_reason(head.noise, cores)
        failures = rejudge.quality_failures(
            head.quality, head.sanity, head.effective_precision, result.cell.workload, result.cell.size
        )
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        return Finding(key, "status", False, f"noise or quality record unreadable: {exc}")
    status, why = rejudge.status(verdicts, failures, found.invalid_reasons, unstable, outside)
    detail = f"{status} from the evidence ({why or 'every audit passed'}); stored {head.status}"
    return Finding(key, "status", status == head.status, detail)


def _entries(result: Result) -> list[tuple[str, AuditEntry]]:
    """The audit entries judged again: those with a verdict (a schema-3 ``flagged`` entry has none)."""
    if result.audit is None:
        return []
    return [(name, entry) for name, entry in result.audit.entries.items() if entry.flagged is None]


def _search(
    archive: Archive, result: Result, folder: str | None, found: rederive.Derived | None
) -> list[Finding]:
    """A server cell's max-QPS search derived from its probes' logs."""
    key = result.cell.key
    if result.cell.scenario != "server" or found is None:
        return []
    try:
        derived = search.derived_search(archive.files, str(folder), found.trials)
    except ValueError as exc:
        return [Finding(key, "server search", False, f"probe log unreadable: {exc}")]
    if derived is None:
        return [Finding(key, "server search", False, "no probe logs in the bundle")]
    diffs = search.search_differences(derived, result.server_search)
    text = "; ".join(f"{name} {_shown(d)} from the logs, stored {_shown(s)}" for name, d, s in diffs)
    detail = text or f"max QPS {derived.max_qps:.6g} from {len(derived.probes)} probe log(s)"
    return [Finding(key, "server search", not diffs, detail)]


def _logs(key: str, found: rederive.Derived) -> Finding:
    """Each scored trial's summary against its detail log: one edited without the other is caught here,
    even when the stored figures and the MANIFEST were rewritten to match the edit."""
    if found.disagreements:
        text = "; ".join(f"mlperf_log_summary.txt vs mlperf_log_detail.txt: {d}" for d in found.disagreements)
        return Finding(key, "logs", False, text)
    return Finding(key, "logs", True, f"{len(found.trials)} summary log(s) agree with their detail logs")


def _curve(archive: Archive, result: Result, folder: str | None) -> Finding:
    """A served-LLM curve derived again from the per-request records it carries."""
    curve = served_curve(result)

    def derive(text: str) -> tuple[list[str], int]:
        records = served.timed_records(text)
        return served.curve_differences(records, curve), len(records)

    path = served.records_path(folder) if folder else None
    found = Derived(
        check="curve",
        file=served.RECORDS_FILE,
        path=path,
        stored=f"{len(curve)} point(s)",
        records="request record(s)",
    )
    return _derived(archive, result.cell.key, found, derive)


def _ladder(archive: Archive, key: str, section: SessionFigures, folder: str | None) -> Finding:
    """A sessions cell's ladder (and reuse figures) derived again from the per-turn records it carries."""

    def derive(text: str) -> tuple[list[str], int]:
        records = ladder.turn_records(text)
        return ladder.ladder_differences(records, section), len(records)

    path = ladder.turns_path(folder) if folder else None
    points = f"{len(section.sessions_ladder)} point(s)"
    found = Derived(
        check="ladder", file=ladder.TURNS_FILE, path=path, stored=points, records="turn record(s)"
    )
    return _derived(archive, key, found, derive)


@dataclass(frozen=True, slots=True)
class Derived:
    """A check of stored figures against the raw records a bundle carries for them."""

    check: str
    file: str
    """The records' file name (``requests.jsonl``, ``turns.jsonl``)."""
    path: str | None
    """Its path in the bundle (None: the cell has no folder in it)."""
    stored: str
    """What is stored, in words ("3 point(s)")."""
    records: str
    """What one record is, in words ("turn record(s)")."""


def _derived(
    archive: Archive, key: str, found: Derived, derive: Callable[[str], tuple[list[str], int]]
) -> Finding:
    """``found``'s finding: its figures ``derive``d again from its records' text (the differences and the
    records read; ValueError: the file does not read)."""
    if found.path is None or found.path not in archive.files:
        return Finding(key, found.check, False, f"{found.stored} stored; no {found.file}")
    try:
        diffs, count = derive(archive.text(found.path))
    except ValueError as exc:
        return Finding(key, found.check, False, str(exc))
    if diffs:
        return Finding(
            key, found.check, False, f"{found.file} vs the stored {found.check}: {'; '.join(diffs)}"
        )
    return Finding(key, found.check, True, f"{found.stored} derived from {count} {found.records}")


def _rules(result: Result, found: rederive.Derived | None) -> list[Finding]:
    """The scored trials ran the cell's scenario with at least its rule set's duration and queries."""
    claimed = claimed_rules(result)
    rules = RULES.get(claimed)
    if found is None:
        return []
    if rules is None:
        return [Finding(result.cell.key, "rules", False, f"unknown rule set {claimed!r}")]
    scenario = result.cell.scenario
    breaches = rederive.rule_breaches(found, rules, scenario)
    detail = "; ".join(breaches) or f"every scored trial ran {scenario} under the {rules.name} rules"
    return [Finding(result.cell.key, "rules", not breaches, detail)]


def _judged(name: str, entry: AuditEntry, result: Result) -> Verdict:
    """The audit judged again; evidence of the wrong shape makes it inconclusive (never a traceback). A
    served LLM's (a cell with a curve) repeat audit is the endpoint's rule."""
    cell = result.cell
    served_cell = bool(served_curve(result))
    try:
        return rejudge.verdict(
            name, entry, result.head.effective_precision, cell.workload, cell.size, served_cell
        )
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        return Verdict(name, INCONCLUSIVE, f"evidence unreadable: {exc}")


def _figures(result: Result, found: rederive.Derived | None) -> Finding:
    key = result.cell.key
    if found is None:
        matched = None if result.figures is None else False
        return Finding(key, "figures", matched, "no LoadGen logs in the bundle for this cell")
    diffs = rederive.differences(found.figures, result.figures)
    trials = len(found.trials)
    rules = RULES.get(claimed_rules(result))
    if rules is not None and trials != rules.trials:
        diffs.append(("trials (stored: the rule set's count)", trials, rules.trials))
    if not diffs:
        value = found.figures.value
        return Finding(key, "figures", True, f"{found.figures.metric} {value:.6g} from {trials} trial log(s)")
    text = "; ".join(f"{name} {_shown(d)} from the logs, stored {_shown(s)}" for name, d, s in diffs)
    return Finding(key, "figures", False, text)


def _shown(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(map(_shown, value)) + "]"
    return repr(value)


def _computes(stack: str) -> bool:
    """Whether a built-in stack computes the model (the null stack does not). Any other name (a plugin
    the bundle names) is judged as computing: verify never imports code a bundle picks."""
    reference = registry.STACKS.get(stack)
    if reference is None:
        return True
    return bool(getattr(registry.load(reference), "computes", True))


def _batch(result: Result) -> int:
    """The samples per LoadGen query the cell claims (1 when it claims none)."""
    batch = result.figures.batch if result.figures is not None else 0
    return batch if batch > 0 else 1
