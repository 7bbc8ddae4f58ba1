"""The run's identity across a bundle's own members (``bundle.identity``): an honest bundle names one run,
one rule set and its machine everywhere; a re-hashed edit of any one member's run id, rules or machine
fingerprint is a difference naming that member, and a result's versions unlike ``versions.json`` a note."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from accelbench.bundle.verify import Finding, Verification
from accelbench.errors import UserError
from accelbench.hardware.detect import machine_to_dict
from tests.unit.test_bundle_ladder import MACHINE, RUN_ID, edited, sessions_bundle, verified

IDENTITY = ("run id", "run rules", "cell machines", "versions")


def _found(checked: Verification, check: str) -> list[Finding]:
    return [f for f in checked.findings if f.check == check]


def _only(checked: Verification, check: str) -> Finding:
    (found,) = _found(checked, check)
    return found


def test_an_honest_bundle_names_one_run_rule_set_and_machine(tmp_path: Path) -> None:
    checked = verified(sessions_bundle(), tmp_path)
    assert checked.passed
    assert all(_only(checked, check).matched is True for check in IDENTITY)


@pytest.mark.parametrize(
    ("path", "key", "line"),
    [
        ("bundle.json", "run_id", f"bundle.json run id 'other-run', run.json '{RUN_ID}'"),
        ("results/000.json", "run_id", f"results/000.json run id 'other-run', run.json '{RUN_ID}'"),
    ],
)
def test_a_member_naming_another_run_differs(tmp_path: Path, path: str, key: str, line: str) -> None:
    def rename(document: dict[str, Any]) -> None:
        document[key] = "other-run"

    checked = verified(edited(sessions_bundle(), path, rename), tmp_path)
    found = _only(checked, "run id")
    assert (found.matched, found.detail) == (False, line) and not checked.passed


def test_a_result_claiming_other_rules_than_the_run_differs(tmp_path: Path) -> None:
    def official(document: dict[str, Any]) -> None:
        document["settings"]["rules"] = "official"

    checked = verified(edited(sessions_bundle(), "results/000.json", official), tmp_path)
    found = _only(checked, "run rules")
    assert found.matched is False and found.detail == "results/000.json rules 'official', run.json 'quick'"

    def run_official(document: dict[str, Any]) -> None:
        document["config"]["rules"] = "official"

    quick_result = edited(
        sessions_bundle(), "results/000.json", lambda d: d["settings"].update(rules="quick")
    )
    checked = verified(edited(quick_result, "run.json", run_official), tmp_path)
    assert _only(checked, "run rules").detail == "results/000.json rules 'quick', run.json 'official'"


def test_a_result_measured_on_another_machine_differs(tmp_path: Path) -> None:
    def moved(document: dict[str, Any]) -> None:
        document["machine_fingerprint"] = "0123456789abcdef"

    checked = verified(edited(sessions_bundle(), "results/000.json", moved), tmp_path)
    found = _only(checked, "cell machines")
    line = f"results/000.json machine fingerprint 0123456789abcdef, machine.json {MACHINE.fingerprint}"
    assert (found.matched, found.detail) == (False, line) and not checked.passed


def test_a_fleet_cell_names_its_nodes_machine(tmp_path: Path) -> None:
    node = {"node_id": "n1", "machine": machine_to_dict(MACHINE)}
    honest = edited(sessions_bundle(), "results/000.json", lambda d: d["settings"].update(fleet_node=node))
    assert _only(verified(honest, tmp_path), "cell machines").matched is True

    def bigger(document: dict[str, Any]) -> None:
        document["settings"]["fleet_node"]["machine"]["logical_cores"] = 64

    found = _only(verified(edited(honest, "results/000.json", bigger), tmp_path), "cell machines")
    assert found.matched is False and found.detail.startswith("results/000.json fleet node fingerprint ")


def test_a_result_version_unlike_versions_json_is_a_note(tmp_path: Path) -> None:
    def upgraded(document: dict[str, Any]) -> None:
        document["versions"]["numpy"] = "9.9.9"

    checked = verified(edited(sessions_bundle(), "results/000.json", upgraded), tmp_path)
    (found,) = _found(checked, "versions")
    assert found.matched is None and found.detail.startswith(
        "results/000.json numpy 9.9.9, versions.json 2.1.0"
    )


def test_a_document_that_does_not_load_is_one_line_naming_it_and_the_others_still_checked(
    tmp_path: Path,
) -> None:
    files = {**sessions_bundle(), "results/001.json": b"[1, 2]"}
    checked = verified(files, tmp_path)
    (found,) = [f for f in checked.findings if f.where == "results/001.json"]
    assert found.check == "document" and found.matched is False and "\n" not in found.detail
    assert found.detail.startswith("UserError: results/001.json is not a result document: ")
    assert _only(checked, "run id").matched is True  # the loaded results are still compared


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda d: d.pop("distributions"), "versions.json: KeyError: 'distributions'"),
        (lambda d: d["distributions"].update(numpy=2), "versions.json: TypeError: field distributions"),
        (lambda d: d.update(python=3.11), "versions.json: TypeError: field python holds float"),
    ],
)
def test_a_malformed_versions_json_is_one_line(tmp_path: Path, edit: Any, said: str) -> None:
    """``versions.json`` is read into its typed record; a member that does not hold its Python and its
    versions as text is refused in one line, not read around."""
    with pytest.raises(UserError) as refused:
        verified(edited(sessions_bundle(), "versions.json", edit), tmp_path)
    assert said in str(refused.value) and "\n" not in str(refused.value)
