"""The run's identity compared across a bundle's own members: every file must name the same run.

``collect`` writes the run id into ``bundle.json``, ``run.json`` and every result; the run's rule set into
``run.json``'s configuration and every result that states one (``settings.rules``, else LoadGen's verdict);
the measuring machine's fingerprint into ``machine.json``, ``run.json`` and every result (a fleet's cell:
its node's machine, stored in ``settings.fleet_node.machine``; a cell no node measured: none). Each
function here names every member that says otherwise, one line each; empty when they all agree.

``versions.json`` is the environment that *wrote* the bundle, each result's ``versions`` the one that
measured the cell: an honest run bundled after an upgrade, or on a fleet, may disagree, so ``verify``
states those differences as notes, never as a match.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from accelbench.bundle.fields import claimed_rules
from accelbench.bundle.members import Header, MachineFile, RunFile, VersionsFile
from accelbench.hardware.detect import machine_from_dict
from accelbench.results import Result

Stored = tuple[str, Result]
"""A result and its bundle path (``results/NNN.json``)."""


def run_id_differences(header: Header, run: RunFile, results: Sequence[Stored]) -> list[str]:
    """Where ``bundle.json`` or a result names another run than ``run.json``."""
    found = []
    if header.run_id != run.run_id:
        found.append(f"bundle.json run id {header.run_id!r}, run.json {run.run_id!r}")
    found += [
        f"{path} run id {result.run_id!r}, run.json {run.run_id!r}"
        for path, result in results
        if result.run_id != run.run_id
    ]
    return found


def rules_differences(run: RunFile, results: Sequence[Stored]) -> list[str]:
    """Where a result claims another rule set than ``run.json``'s configuration (a result that states
    none, as a served or training cell, is not compared here: ``verify``'s rules check needs one of a
    LoadGen cell)."""
    found = []
    for path, result in results:
        claimed = claimed_rules(result)
        if claimed and claimed != run.rules:
            found.append(f"{path} rules {claimed!r}, run.json {run.rules!r}")
    return found


def fingerprint_differences(machine: MachineFile, results: Sequence[Stored]) -> list[str]:
    """Where a result's machine fingerprint is not its machine's: ``machine.json``'s (as stored there),
    or a fleet cell's node machine's (computed from its facts); a result with none measured nothing."""
    found = []
    for path, result in results:
        said = result.machine_fingerprint
        if result.node_machine is not None:
            found += _node_differences(path, said, result.node_machine)
        elif not said and result.body is not None:
            found.append(f"{path} holds measurements and no machine fingerprint")
        elif said and said != machine.fingerprint:
            found.append(f"{path} machine fingerprint {said}, machine.json {machine.fingerprint}")
    return found


def version_differences(written: VersionsFile, results: Sequence[Stored]) -> tuple[list[str], int]:
    """Each result's ``versions`` against ``versions.json`` (a name it does not list is not compared: a
    remote server's, say), and how many versions were compared."""
    listed = {normalized(name): version for name, version in written.distributions.items()}
    if written.python:
        listed["python"] = written.python
    found, compared = [], 0
    for path, result in results:
        for name, version in sorted(result.head.versions.items()):
            other = listed.get(normalized(name))
            if other is None:
                continue
            compared += 1
            if other != version:
                found.append(f"{path} {name} {version}, versions.json {other}")
    return found, compared


def normalized(name: str) -> str:
    """A distribution's name as PEP 503 compares it (``PyYAML``, ``pyyaml``; ``a_b``, ``a-b``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _node_differences(path: str, said: str, node: Mapping[str, object]) -> list[str]:
    try:
        derived = machine_from_dict(node).fingerprint
    except (ValueError, TypeError, KeyError) as exc:
        return [f"{path} fleet node machine does not load: {exc}"]
    claims = {said, str(node.get("fingerprint"))}
    if claims != {derived}:
        return [f"{path} fleet node fingerprint {derived} from its facts, stored {sorted(claims)}"]
    return []
