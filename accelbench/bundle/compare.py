"""``accelbench compare A B``: two runs (bundles, or run ids in a store) side by side on the cells they share.

Each shared cell (same workload, size, variant, stack, device and scenario) gets LoadGen's headline of
both sides with its interval across trials, and ``explain``'s decomposition of the throughput ratio B / A
into chips x transistors x node x architecture + software (``accelbench.normalize.explain``), whose
central values multiply back to the ratio. What does not compare is refused, saying why: different rule
sets (the whole comparison), no shared cell (the workloads of each side are named), and per cell a
different effective precision. A bundle is verified first (``accelbench.bundle.verify``) and refused when
a claim differs. Only verified (``ok``) cells are explained unless ``include_unverified`` (marked).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelbench.bundle import members
from accelbench.bundle.archive import read_archive
from accelbench.bundle.fields import headline, stored
from accelbench.bundle.verify import verify
from accelbench.errors import UserError
from accelbench.files import json_text
from accelbench.hardware.chips import ChipTable
from accelbench.hardware.detect import machine_from_dict
from accelbench.hardware.match import match_device
from accelbench.normalize.explain import Explanation, explain
from accelbench.normalize.subjects import Subject, from_result
from accelbench.results import Result
from accelbench.store import open_store


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a comparison: a run's rules, machine facts and results by cell key."""

    label: str
    run_id: str
    rules: str
    machine: Mapping[str, Any]
    results: Mapping[str, Result]


@dataclass(frozen=True, slots=True)
class Pairing:
    """One shared cell: both statuses and headlines, and the explanation (None with the refusal)."""

    key: str
    status_a: str
    status_b: str
    headline_a: Mapping[str, Any] | None
    headline_b: Mapping[str, Any] | None
    explanation: Explanation | None
    refused: str = ""
    differences: tuple[str, ...] = ()
    """Settings that differ between the sides (threads, batch, machine): what the residual holds."""


def side_of(text: str, store: Path) -> Side:
    """A bundle file (a path ending .tar.gz, .tgz or .zip that exists) or a run id in ``store``."""
    path = Path(text)
    if path.suffix in (".zip", ".tgz", ".gz") or path.is_file():
        return _bundle_side(path)
    with open_store(store, read_only=True) as opened:
        run = opened.run(text)
        results = {r.cell.key: r for r in opened.results(text)}
    return Side(text, text, members.config_rules(run.config), run.machine, results)


def compare(a: Side, b: Side, chips: ChipTable, include_unverified: bool = False) -> tuple[Pairing, ...]:
    """The shared cells of ``a`` and ``b``, each explained or refused; UserError when nothing compares."""
    if a.rules != b.rules:
        raise UserError(f"not comparable: {a.label} ran rules {a.rules!r}, {b.label} rules {b.rules!r}")
    shared = sorted(set(a.results) & set(b.results))
    if not shared:
        raise UserError(
            f"not comparable: no shared cell ({a.label}: {_workloads(a)}; {b.label}: {_workloads(b)})"
        )
    return tuple(_pairing(key, a, b, chips, include_unverified) for key in shared)


def _pairing(key: str, a: Side, b: Side, chips: ChipTable, include_unverified: bool) -> Pairing:
    left, right = a.results[key], b.results[key]
    heads = (headline(left), headline(right))
    differ = _differences(left, right) + _cache_difference(prefix_cache(left), prefix_cache(right))
    base = Pairing(key, left.head.status, right.head.status, *heads, None, differences=differ)
    if left.head.effective_precision != right.head.effective_precision:
        why = f"precision classes differ: {left.head.effective_precision} vs {right.head.effective_precision}"
        return dataclasses.replace(base, refused=why)
    unverified = [r.head.status for r in (left, right) if r.head.status != "ok"]
    if unverified and not include_unverified:
        return dataclasses.replace(
            base, refused=f"unverified ({', '.join(unverified)}): only ok cells compare"
        )
    try:
        subjects = [_subject(side, key, chips) for side in (a, b)]
    except UserError as exc:
        return dataclasses.replace(base, refused=str(exc))
    return dataclasses.replace(base, explanation=explain(*subjects))


def _subject(side: Side, key: str, chips: ChipTable) -> Subject:
    result = side.results[key]
    if result.head.status != "ok":  # --include-unverified: explained, and marked UNVERIFIED by the caller
        result = dataclasses.replace(result, head=dataclasses.replace(result.head, status="ok"))
    try:
        machine = machine_from_dict(side.machine)
    except (ValueError, TypeError, KeyError) as exc:
        raise UserError(f"{side.label}: the machine facts cannot be read ({exc})") from None
    return from_result(f"{side.run_id}/{key}", result, match_device(machine, result.cell.device, chips))


def _differences(a: Result, b: Result) -> tuple[str, ...]:
    found = (
        [f"machine {a.machine_fingerprint} vs {b.machine_fingerprint}"]
        if a.machine_fingerprint != b.machine_fingerprint
        else []
    )
    for name, left, right in (("threads", a.threads, b.threads), ("batch_size", a.batch_size, b.batch_size)):
        if left != right:
            found.append(f"{name} {left} vs {right}")
    return tuple(found)


def prefix_cache(result: Result) -> str:
    """The server's prefix cache a served-LLM cell declares (``SessionFigures.prefix_cache``,
    ``EndpointFigures.prefix_cache``); "" for any other cell, and for a section stored before it was kept."""
    served = result.session_ladder or result.curve
    return served.prefix_cache if served is not None else ""


def _cache_difference(left: str, right: str) -> tuple[str, ...]:
    """The servers' prefix caches when the two cells' differ: a cache-on figure is never set beside a
    cache-off one unlabelled."""
    if left == right:
        return ()
    return (f"server prefix cache {left or 'not recorded'} vs {right or 'not recorded'}",)


def _bundle_side(path: Path) -> Side:
    archive = read_archive(path)
    checked = verify(archive)
    if not checked.passed:
        differ = sum(f.matched is False for f in checked.findings)
        raise UserError(f"{path} does not verify ({differ} claim(s) differ): see accelbench verify {path}")
    run = members.run_file(archive)
    results = {}
    for name, data in archive.files.items():
        if name.startswith("results/") and name.endswith(".json"):
            result = stored(json_text(data, f"{path} {name}", finite=False), f"{path} {name}")
            results[result.cell.key] = result
    machine = members.machine_file(archive)
    return Side(path.name, run.run_id, run.rules, machine.facts, results)


def _workloads(side: Side) -> str:
    return ", ".join(sorted({key.split("/")[0] for key in side.results})) or "no cells"
