"""``accelbench publish DIR -o SITE``: the entries of a static results site, from every bundle in a folder.

Each bundle (``*.tar.gz``, ``*.tgz``, ``*.zip`` in ``DIR``) is read and verified
(``accelbench.bundle.verify``); each of its cells becomes an ``Entry`` with its headline, its normalized
figures per chip and per dollar (``accelbench.normalize``), the machine, and the bundle's verify verdict.
An entry ranks (``ranked``) only when its status is ``ok`` and its bundle verified. A file that is not a
readable bundle is listed with the reason and left out, as is a result document that does not load. The
HTML is drawn by ``accelbench.report.site``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelbench.bundle import members
from accelbench.bundle.archive import SUFFIXES, Archive, read_archive
from accelbench.bundle.fields import claimed_rules, stored
from accelbench.bundle.verify import verify
from accelbench.errors import UserError
from accelbench.files import json_text
from accelbench.hardware.chips import ChipTable
from accelbench.normalize.lookup import result_figures
from accelbench.results import Result

PER = ("chip", "usd")
"""The normalized views of the site: per chip and per dollar (purchase price)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One cell of one bundle, as the site lists it."""

    bundle: str
    run_id: str
    key: str
    workload: str
    scenario: str
    stack: str
    rules: str
    precision: str
    status: str
    verified: bool
    machine: str
    metric: str
    value: float | None
    ci: tuple[float, float] | None
    per_work: Mapping[str, float]
    """Units of work per second per chip (``chip``) and per US dollar of purchase price (``usd``)."""

    @property
    def ranked(self) -> bool:
        """Only an ``ok`` cell of a bundle that verified ranks."""
        return self.status == "ok" and self.verified and self.value is not None


@dataclass(frozen=True, slots=True)
class Listed:
    """One file of the folder: its name, whether it verified, and why not (or why it was unreadable)."""

    name: str
    verified: bool
    note: str


def entries_of(folder: Path, chips: ChipTable) -> tuple[list[Entry], list[Listed]]:
    """Every cell of every bundle in ``folder``, and every bundle file with its verdict."""
    if not folder.is_dir():
        raise UserError(f"publish: {folder} is not a folder of bundles")
    paths = sorted(p for p in folder.iterdir() if p.is_file() and p.name.lower().endswith(SUFFIXES))
    if not paths:
        raise UserError(f"publish: no bundle (*.tar.gz, *.tgz, *.zip) in {folder}")
    entries: list[Entry] = []
    listed: list[Listed] = []
    for path in paths:
        try:
            archive = read_archive(path)
            checked = verify(archive)
        except UserError as exc:
            listed.append(Listed(path.name, False, f"unreadable: {exc}"))
            continue
        differ = sum(f.matched is False for f in checked.findings)
        note = ("signed" if checked.signed else "unsigned") + (
            f"; {differ} claim(s) differ" if differ else ""
        )
        listed.append(Listed(path.name, checked.passed, note))
        entries += _entries(path.name, archive, checked.passed, chips)
    return entries, listed


def _entries(name: str, archive: Archive, verified: bool, chips: ChipTable) -> list[Entry]:
    machine = members.machine_file(archive)
    run = members.run_file(archive)
    label = f"{machine.machine.cpu_model if machine.machine else '?'} ({machine.fingerprint})"
    found = []
    for result in _results(name, archive):
        figures, cell = result.figures, result.cell
        found.append(
            Entry(
                bundle=name,
                run_id=run.run_id,
                key=cell.key,
                workload=cell.workload,
                scenario=cell.scenario,
                stack=cell.stack,
                rules=claimed_rules(result),
                precision=result.head.effective_precision or "none",
                status=result.head.status,
                verified=verified,
                machine=label,
                metric=figures.metric if figures else "",
                value=figures.value if figures else None,
                ci=(float(figures.ci[0]), float(figures.ci[1])) if figures else None,
                per_work=_per_work(result, machine.facts, chips) if result.head.status == "ok" else {},
            )
        )
    return found


def _results(name: str, archive: Archive) -> list[Result]:
    """The bundle's result documents that load as results; one that does not is left out (``verify``
    has said so: its bundle does not verify)."""
    found = []
    for path in sorted(p for p in archive.files if p.startswith("results/") and p.endswith(".json")):
        try:
            found.append(stored(json_text(archive.files[path], path, finite=False), f"{name} {path}"))
        except (ValueError, UserError):
            continue
    return found


def _per_work(result: Result, machine: Mapping[str, Any], chips: ChipTable) -> dict[str, float]:
    """Work per second per chip and per dollar (``normalize``'s figures, central values)."""
    try:
        normalized = result_figures(result, machine, chips)
    except (ValueError, TypeError, KeyError, UserError):
        return {}
    return {f.per: f.performance.central for f in normalized if f.per in PER}
