"""What a bundle holds, gathered from a store: ``bundle_files(store, run_id)`` -> archive path -> bytes.

Layout (``docs/bundles.md``)::

    bundle.json        format, schema_version, run id, the cells (key -> folder), signed or not
    run.json           the run as stored: status, created_at, config (with its input seed, stored at run end)
    machine.json       the machine fingerprint and every detected fact
    versions.json      the Python and every installed distribution of the environment that wrote the bundle
    results/NNN.json   one stored result document per cell (figures, audits with their evidence, versions)
    cells/<folder>/loadgen/<trial>/mlperf_log_{summary,detail}.txt   LoadGen's raw logs, every trial
    cells/<folder>/**/*.jsonl   per-request records (served LLM cells), whatever their name

Nothing else of a cell folder travels (no model files, caches, stderr or spec with local paths). Every text
is scrubbed (``Scrubber``): the store, run, home and working folders become ``<store>``, ``<run>``,
``<home>``, ``<cwd>``, and configuration keys that name a secret are dropped.
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from accelbench.files import read_json, read_text
from accelbench.store import Store
from accelbench.stored import to_dict

FORMAT = "accelbench-bundle"
SCHEMA_VERSION = 1
LOG_NAMES = ("mlperf_log_summary.txt", "mlperf_log_detail.txt")
SECRET_KEY = re.compile(r"(token|secret|password|passwd|api_?key|credential|private)", re.IGNORECASE)
_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")


@dataclass(frozen=True, slots=True)
class Scrubber:
    """Replaces absolute folders of this machine by placeholders, longest first."""

    folders: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, named: Mapping[str, Path]) -> Scrubber:
        """``named``: placeholder -> folder; the root and one-part folders are left alone."""
        pairs = {str(p.resolve()): f"<{name}>" for name, p in named.items() if len(p.resolve().parts) > 1}
        pairs.update({str(p): f"<{name}>" for name, p in named.items() if len(p.parts) > 1})
        return cls(tuple(sorted(pairs.items(), key=lambda kv: -len(kv[0]))))

    def text(self, text: str) -> str:
        """``text`` with every folder replaced (only where a path component ends there)."""
        for folder, placeholder in self.folders:
            text = re.sub(re.escape(folder) + r"(?![A-Za-z0-9._-])", placeholder, text)
        return _USERINFO.sub("", text)


def bundle_files(store: Store, run_id: str, signed: bool) -> dict[str, bytes]:
    """Every file of the bundle of ``run_id`` but ``MANIFEST`` and ``SIGNATURE``."""
    record = store.run(run_id)
    run_dir = store.path / "runs" / run_id
    scrub = Scrubber.of({"run": run_dir, "store": store.path, "home": Path.home(), "cwd": Path.cwd()})
    results = store.results(run_id)
    folders = _cell_folders(run_dir, {r.cell.key for r in results})
    files: dict[str, bytes] = {}
    for number, result in enumerate(results):
        files[f"results/{number:03d}.json"] = _json(to_dict(result), scrub)
    for folder in folders.values():
        files.update(_cell_files(run_dir / "cells" / folder, f"cells/{folder}", scrub))
    run = {
        "run_id": record.run_id,
        "created_at": record.created_at,
        "status": record.status,
        "machine_fingerprint": record.machine_fingerprint,
        "config": _without_secrets(record.config),
    }
    files["run.json"] = _json(run, scrub)
    files["machine.json"] = _json(dict(record.machine), scrub)
    files["versions.json"] = _json(_versions(), scrub)
    files["bundle.json"] = _json(_header(run_id, folders, signed), scrub)
    return files


def _header(run_id: str, folders: Mapping[str, str], signed: bool) -> dict[str, Any]:
    from accelbench import __version__

    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "accelbench": __version__,
        "cells": dict(sorted(folders.items())),
        "signed": signed,
    }


def _cell_folders(run_dir: Path, keys: set[str]) -> dict[str, str]:
    """cell key -> folder name under ``runs/<id>/cells`` (named by its ``spec.json``), for ``keys``."""
    found: dict[str, str] = {}
    cells = run_dir / "cells"
    for folder in sorted(cells.iterdir()) if cells.is_dir() else ():
        try:
            cell = read_json(folder / "spec.json", "cell spec")["cell"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        key = _spec_cell_key(cell) if isinstance(cell, Mapping) else None
        if key in keys:
            found[key] = folder.name
    return found


def _spec_cell_key(cell: Mapping[str, Any]) -> str:
    """The cell key a ``spec.json``'s ``cell`` names, as written (a part it lacks is empty: no match)."""
    parts = ("workload", "size", "variant", "stack", "device", "scenario")
    return "/".join(str(cell.get(part, "")) for part in parts)


def _cell_files(folder: Path, prefix: str, scrub: Scrubber) -> dict[str, bytes]:
    """The LoadGen logs of every trial and every ``*.jsonl`` of one cell folder (no links followed)."""
    chosen: list[Path] = []
    loadgen = folder / "loadgen"
    if loadgen.is_dir():
        chosen += sorted(p for name in LOG_NAMES for p in loadgen.rglob(name))  # server probes: -search/p<N>
    chosen += sorted(folder.rglob("*.jsonl"))
    return {
        f"{prefix}/{p.relative_to(folder).as_posix()}": scrub.text(_log_text(p)).encode()
        for p in chosen
        if p.is_file() and not p.is_symlink()
    }


def _log_text(path: Path) -> str:
    """A cell's log as it is (bytes that are not UTF-8 replaced), through the guarded reader."""
    return read_text(path, "cell log", errors="replace")


def _without_secrets(config: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if not SECRET_KEY.search(str(k))}


def _versions() -> dict[str, Any]:
    names: Iterable[tuple[str, str]] = (
        (str(d.metadata["Name"]), str(d.version)) for d in importlib.metadata.distributions()
    )
    return {"python": platform.python_version(), "distributions": dict(sorted(names))}


def _json(value: Any, scrub: Scrubber) -> bytes:
    return (scrub.text(json.dumps(value, indent=1, sort_keys=True)) + "\n").encode()
