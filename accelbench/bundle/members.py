"""A bundle's own JSON members, each read once into a frozen record: ``bundle.json`` (``Header``),
``run.json`` (``RunFile``), ``machine.json`` (``MachineFile``) and ``versions.json`` (``VersionsFile``).

``verify``, ``compare`` and ``publish`` read these records, never the documents: the raw reads of the
three files (``accelbench.bundle.collect`` writes them) are here and nowhere else. ``bundle.json`` and
``machine.json`` are read leniently (a missing key is a claim that fails to match, said as a finding);
``run.json`` must hold its run id, machine fingerprint and configuration (one line, exit 2, otherwise);
``versions.json`` may be absent (a bundle written before it was); when there, it must hold its Python and
its distributions' versions as text (one line, exit 2, otherwise).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accelbench.bundle.archive import Archive
from accelbench.bundle.collect import FORMAT
from accelbench.errors import UserError, first_line
from accelbench.files import json_text
from accelbench.hardware.detect import Machine, machine_from_dict
from accelbench.record_types import check_record

VERSIONS = "versions.json"


@dataclass(frozen=True, slots=True)
class Header:
    """``bundle.json``: the run it bundles, whether it claims a signature, and each cell's folder."""

    run_id: str
    signed: bool
    folders: Mapping[str, str]
    """cell key -> its folder under ``cells/`` (a cell without one has no logs to derive from)."""


@dataclass(frozen=True, slots=True)
class RunFile:
    """``run.json``: the run as stored, as far as a reader of the bundle needs it."""

    run_id: str
    machine_fingerprint: str
    rules: str
    """The rule set of the run's configuration ("" when it names none)."""


@dataclass(frozen=True, slots=True)
class MachineFile:
    """``machine.json``: the detected facts as stored, the fingerprint they claim, and the facts as a
    ``Machine`` (None, with ``problem``, when they do not load)."""

    facts: Mapping[str, Any]
    fingerprint: str
    machine: Machine | None
    problem: str = ""

    @property
    def logical_cores(self) -> int | None:
        """The machine's logical cores (None when the facts do not load or hold no count)."""
        cores = self.machine.logical_cores if self.machine is not None else None
        return cores if isinstance(cores, int) else None


@dataclass(frozen=True, slots=True)
class VersionsFile:
    """``versions.json``: the Python and the installed distributions of the environment that wrote the
    bundle (name as installed -> version)."""

    python: str
    distributions: Mapping[str, str]


def header(archive: Archive) -> Header:
    """The bundle's ``bundle.json``; UserError when it is not an accelbench bundle's."""
    document = _document(archive, "bundle.json")
    kind = document.get("format")
    if kind != FORMAT:
        raise UserError(f"not an accelbench bundle: bundle.json format is {kind!r}")
    cells = document.get("cells")
    folders = {str(k): str(v) for k, v in cells.items() if v} if isinstance(cells, Mapping) else {}
    return Header(str(document.get("run_id", "")), bool(document.get("signed")), folders)


def run_file(archive: Archive) -> RunFile:
    """The bundle's ``run.json``; UserError when it lacks its run id, fingerprint or configuration."""
    document = _document(archive, "run.json")
    try:
        run_id, fingerprint, config = (document[k] for k in ("run_id", "machine_fingerprint", "config"))
    except KeyError as exc:
        raise UserError(f"bundle member run.json has no {exc}") from None
    if not isinstance(run_id, str) or not isinstance(fingerprint, str) or not isinstance(config, Mapping):
        raise UserError("bundle member run.json: run_id, machine_fingerprint or config of the wrong type")
    return RunFile(run_id, fingerprint, config_rules(config))


def machine_file(archive: Archive) -> MachineFile:
    """The bundle's ``machine.json`` (its facts may fail to load: said by ``problem``)."""
    document = _document(archive, "machine.json")
    claimed = str(document.get("fingerprint"))
    try:
        return MachineFile(document, claimed, machine_from_dict(document))
    except (ValueError, TypeError, KeyError) as exc:
        return MachineFile(document, claimed, None, str(exc))


def versions_file(archive: Archive) -> VersionsFile | None:
    """The bundle's ``versions.json`` (None when it carries none)."""
    if VERSIONS not in archive.files:
        return None
    document = _document(archive, VERSIONS)
    try:
        found = VersionsFile(python=document["python"], distributions=document["distributions"])
        check_record(found)
    except (KeyError, TypeError) as exc:
        raise UserError(f"bundle member {VERSIONS}: {first_line(exc)}") from None
    return found


def config_rules(config: Mapping[str, Any]) -> str:
    """The rule set a stored run configuration names ("" when none)."""
    return str(config.get("rules", ""))


def _document(archive: Archive, path: str) -> Mapping[str, Any]:
    try:
        value = json_text(archive.text(path), f"bundle member {path}")
    except ValueError:
        raise UserError(f"bundle member {path} is not JSON") from None
    if not isinstance(value, Mapping):
        raise UserError(f"bundle member {path} is not a JSON object")
    return value
