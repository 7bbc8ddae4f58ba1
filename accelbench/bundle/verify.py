"""``accelbench verify``: check a bundle's hashes and signature, then derive every claim again.

Nothing a result document says is taken on trust: the figures are computed from the LoadGen logs
(``accelbench.bundle.rederive``), each audit's verdict from its evidence and the status from those verdicts
(``accelbench.bundle.rejudge``), the machine fingerprint from the detected facts; each is compared with what
the document claims. The hashes catch an edit made without re-hashing; a re-hashed edit is caught by the
derivation (or, for a signed bundle, by the signature).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accelbench import registry
from accelbench.audits.verdict import INCONCLUSIVE, Verdict
from accelbench.bundle import rederive, rejudge, search, served, signing
from accelbench.bundle.archive import MANIFEST, SIGNATURE, Archive, parse_manifest, sha256_hex
from accelbench.bundle.collect import FORMAT
from accelbench.bundle.fields import Stored, stored
from accelbench.errors import UserError
from accelbench.files import json_text
from accelbench.hardware.detect import machine_from_dict
from accelbench.scenarios.rules import RULES

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
    header = _document(archive, "bundle.json")
    if header.get("format") != FORMAT:
        raise UserError(f"not an accelbench bundle: bundle.json format is {header.get('format')!r}")
    signed = SIGNATURE in archive.files
    findings.append(_signature(archive, bool(header.get("signed")), trusted))
    machine = _document(archive, "machine.json")
    findings.append(_fingerprint(machine, _document(archive, "run.json")))
    cores = machine.get("logical_cores") if isinstance(machine.get("logical_cores"), int) else None
    cells = header.get("cells")
    folders: Mapping[str, Any] = cells if isinstance(cells, Mapping) else {}
    for path in sorted(p for p in archive.files if p.startswith("results/") and p.endswith(".json")):
        findings += _cell(archive, path, folders, cores)
    return Verification(str(header.get("run_id", "")), signed, tuple(findings))


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


def _fingerprint(machine: Mapping[str, Any], run: Mapping[str, Any]) -> Finding:
    try:
        derived = machine_from_dict(machine).fingerprint
    except (ValueError, TypeError, KeyError) as exc:
        return Finding(BUNDLE, "machine", False, f"machine.json does not load: {exc}")
    claims = {str(machine.get("fingerprint")), str(run.get("machine_fingerprint"))}
    matched = claims == {derived}
    return Finding(
        BUNDLE, "machine", matched, f"fingerprint {derived} from the facts; stored {sorted(claims)}"
    )


def _cell(archive: Archive, path: str, folders: Mapping[str, Any], cores: int | None) -> list[Finding]:
    try:
        doc = json_text(archive.files[path], path, finite=False)
        claims = stored(doc, path)
    except (ValueError, UserError) as exc:
        return [Finding(path, "document", False, str(exc).splitlines()[0])]
    folder = folders.get(claims.key)
    computes = _computes(claims.stack)
    try:
        found = rederive.derived(archive.files, str(folder), _batch(claims), computes) if folder else None
    except UserError as exc:
        return [Finding(claims.key, "figures", False, str(exc))]
    logs = [] if found is None else [_logs(claims, found)]
    findings = [
        *logs,
        _figures(claims, found),
        *_rules(claims, found),
        *_search(archive, claims, folder, found),
    ]
    if claims.curve:
        findings.append(_curve(archive, claims, folder))
    precision_name = claims.effective_precision
    served = bool(claims.curve)
    verdicts = [_judged(n, e, claims, served) for n, e in (claims.audit or {}).items() if _is_entry(e)]
    verdicts = verdicts or [rejudge.unaudited()]
    for judged in verdicts if claims.audit else ():
        said = str((claims.audit or {})[judged.audit].get("verdict"))
        detail = f"{judged.outcome} from its evidence; stored {said}"
        findings.append(Finding(claims.key, f"audit {judged.audit}", judged.outcome == said, detail))
    if found is None:
        return [*findings, Finding(claims.key, "status", None, f"{claims.status}: no LoadGen logs to judge")]
    figures = rederive.with_sut_timer(found.figures, claims.figures)
    try:
        unstable = rejudge.unstable_reason(claims.noise, figures, cores, computes)
        failures = rejudge.quality_failures(
            claims.quality, claims.sanity, precision_name, claims.workload, claims.size
        )
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        return [*findings, Finding(claims.key, "status", False, f"noise or quality record unreadable: {exc}")]
    status, why = rejudge.status(verdicts, failures, found.invalid_reasons, unstable)
    detail = f"{status} from the evidence ({why or 'every audit passed'}); stored {claims.status}"
    return [*findings, Finding(claims.key, "status", status == claims.status, detail)]


def _search(archive: Archive, claims: Stored, folder: Any, found: rederive.Derived | None) -> list[Finding]:
    """A server cell's max-QPS search derived from its probes' logs."""
    if claims.scenario != "server" or found is None:
        return []
    try:
        derived = search.derived_search(archive.files, str(folder), found.trials)
    except ValueError as exc:
        return [Finding(claims.key, "server search", False, f"probe log unreadable: {exc}")]
    if derived is None:
        return [Finding(claims.key, "server search", False, "no probe logs in the bundle")]
    diffs = search.search_differences(derived, claims.server_search)
    text = "; ".join(f"{name} {_shown(d)} from the logs, stored {_shown(s)}" for name, d, s in diffs)
    detail = text or f"max QPS {derived.max_qps:.6g} from {len(derived.probes)} probe log(s)"
    return [Finding(claims.key, "server search", not diffs, detail)]


def _logs(claims: Stored, found: rederive.Derived) -> Finding:
    """Each scored trial's summary against its detail log: one edited without the other is caught here,
    even when the stored figures and the MANIFEST were rewritten to match the edit."""
    if found.disagreements:
        text = "; ".join(f"mlperf_log_summary.txt vs mlperf_log_detail.txt: {d}" for d in found.disagreements)
        return Finding(claims.key, "logs", False, text)
    return Finding(
        claims.key, "logs", True, f"{len(found.trials)} summary log(s) agree with their detail logs"
    )


def _curve(archive: Archive, claims: Stored, folder: Any) -> Finding:
    """A served-LLM curve derived again from the per-request records it carries."""
    path = served.records_path(str(folder)) if folder else None
    if path is None or path not in archive.files:
        return Finding(
            claims.key, "curve", False, f"{len(claims.curve)} point(s) stored; no {served.RECORDS_FILE}"
        )
    try:
        records = served.timed_records(archive.text(path))
    except ValueError as exc:
        return Finding(claims.key, "curve", False, str(exc))
    diffs = served.curve_differences(records, claims.curve)
    if diffs:
        return Finding(
            claims.key, "curve", False, f"{served.RECORDS_FILE} vs the stored curve: {'; '.join(diffs)}"
        )
    detail = f"{len(claims.curve)} point(s) derived from {len(records)} request record(s)"
    return Finding(claims.key, "curve", True, detail)


def _rules(claims: Stored, found: rederive.Derived | None) -> list[Finding]:
    """The scored trials ran the cell's scenario with at least its rule set's duration and queries."""
    rules = RULES.get(claims.rules)
    if found is None:
        return []
    if rules is None:
        return [Finding(claims.key, "rules", False, f"unknown rule set {claims.rules!r}")]
    breaches = rederive.rule_breaches(found, rules, claims.scenario)
    detail = "; ".join(breaches) or f"every scored trial ran {claims.scenario} under the {rules.name} rules"
    return [Finding(claims.key, "rules", not breaches, detail)]


def _judged(name: str, entry: Mapping[str, Any], claims: Stored, served: bool) -> Verdict:
    """The audit judged again; evidence of the wrong shape makes it inconclusive (never a traceback)."""
    try:
        return rejudge.verdict(name, entry, claims.effective_precision, claims.workload, claims.size, served)
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        return Verdict(name, INCONCLUSIVE, f"evidence unreadable: {exc}")


def _figures(claims: Stored, found: rederive.Derived | None) -> Finding:
    if found is None:
        matched = None if claims.figures is None else False
        return Finding(claims.key, "figures", matched, "no LoadGen logs in the bundle for this cell")
    diffs = rederive.differences(found.figures, claims.figures)
    trials = len(found.trials)
    rules = RULES.get(claims.rules)
    if rules is not None and trials != rules.trials:
        diffs.append(("trials (stored: the rule set's count)", trials, rules.trials))
    if not diffs:
        value = found.figures.value
        return Finding(
            claims.key, "figures", True, f"{found.figures.metric} {value:.6g} from {trials} trial log(s)"
        )
    text = "; ".join(f"{name} {_shown(d)} from the logs, stored {_shown(s)}" for name, d, s in diffs)
    return Finding(claims.key, "figures", False, text)


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


def _batch(claims: Stored) -> int:
    batch = (claims.figures or {}).get("batch")
    return batch if isinstance(batch, int) and not isinstance(batch, bool) and batch > 0 else 1


def _is_entry(entry: object) -> bool:
    return isinstance(entry, Mapping) and "verdict" in entry


def _document(archive: Archive, path: str) -> Mapping[str, Any]:
    try:
        value = json_text(archive.text(path), f"bundle member {path}")
    except ValueError:
        raise UserError(f"bundle member {path} is not JSON") from None
    if not isinstance(value, Mapping):
        raise UserError(f"bundle member {path} is not a JSON object")
    return value
