"""Readers use a result's typed fields: no ``.get("...")`` or ``["..."]`` into an untyped part of a result
outside the modules that own it (``results.py`` and ``sections.py``: the stored form; ``audits/``: the
audits judge their own evidence), and ``Result`` (with its ``Head``) keeps at most one
``Mapping[str, Any]`` field (``settings``: the stack's and the run's own knobs). ``report/`` reads what
``normalize/`` hands it (``CellFigures``, ``Generalization``, ``Expressiveness``) by attribute: the only
``.get("key")`` left in either package are listed in ``RAW_READS`` with why."""

from __future__ import annotations

import ast
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from accelbench.head import Head
from accelbench.results import Result

PACKAGE = Path(__file__).resolve().parents[2] / "accelbench"
OWNERS = (PACKAGE / "results.py", PACKAGE / "sections.py", PACKAGE / "audit_section.py", PACKAGE / "audits")
UNTYPED = {"settings", "evidence"}
"""The untyped parts of a result: ``Result.head.settings``, an audit's ``evidence`` (each audit its own)."""


def _untyped(node: ast.AST) -> bool:
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        node = node.values[0]
    return isinstance(node, ast.Attribute) and node.attr in UNTYPED


def _key_receiver(node: ast.AST) -> ast.AST | None:
    """The receiver of ``x.get("key")`` or ``x["key"]``, else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        key = node.args[0] if node.args else None
        return node.func.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.value if isinstance(node.slice.value, str) else None
    return None


def reach_ins(source: str) -> list[int]:
    """Lines that read a key of an untyped part, directly or through a name bound to it in the same scope."""
    lines = []
    for scope in ast.walk(ast.parse(source)):
        if not isinstance(scope, ast.Module | ast.FunctionDef | ast.Lambda):
            continue
        bound = {
            target.id
            for node in ast.walk(scope)
            if isinstance(node, ast.Assign | ast.NamedExpr) and _untyped(node.value)
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)
        }
        for node in ast.walk(scope):
            receiver = _key_receiver(node)
            if receiver is not None and (
                _untyped(receiver) or (isinstance(receiver, ast.Name) and receiver.id in bound)
            ):
                lines.append(node.lineno)
    return sorted(set(lines))


def test_no_reader_reaches_into_an_untyped_part_of_a_result() -> None:
    found = {
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if not any(path == owner or owner in path.parents for owner in OWNERS)
        for line in reach_ins(path.read_text())
    }
    assert found == set()


def test_the_scan_finds_a_planted_reach_in() -> None:
    planted = (
        "def rules(result):\n"
        "    return result.settings.get('rules')\n"
        "def node(result):\n"
        "    node = result.settings or {}\n"
        "    return node['fleet_node']\n"
        "def speedup(entry):\n"
        "    return entry.evidence['speedup'] + len(entry.reason)\n"
    )
    assert reach_ins(planted) == [2, 5, 7]


def test_result_keeps_one_untyped_mapping_field() -> None:
    hints = {**typing.get_type_hints(Result), **typing.get_type_hints(Head)}  # the head's: Result.head
    untyped = sorted(name for name, hint in hints.items() if hint == Mapping[str, Any])
    assert untyped == ["settings"]
    audit = typing.get_type_hints(Result.audit.fget)["return"]  # type: ignore[attr-defined]
    assert audit.__args__[0].__name__ == "AuditSection"


SEAM = (PACKAGE / "normalize", PACKAGE / "report")
"""The normalize -> report seam: ``normalize`` hands ``report`` typed records (``CellFigures``,
``Generalization``, ``Expressiveness``), read by attribute."""
RAW_READS: dict[tuple[str, str], tuple[int, str]] = {
    ("report/bundles.py", "value"): (1, "a bundle's stored headline (bundle.fields.headline)"),
    ("report/bundles.py", "ci"): (1, "a bundle's stored headline (bundle.fields.headline)"),
    ("report/documents.py", "serve_hardware"): (1, "the run's stored config"),
    ("report/documents.py", "serve_hardware_source"): (1, "the run's stored config"),
    ("report/html.py", "rules"): (1, "the run's stored config"),
    ("report/terminal.py", "size_bytes"): (1, "a cache of the stored machine record (machine.json)"),
    ("report/terminal.py", "level"): (1, "a cache of the stored machine record (machine.json)"),
    ("report/terminal.py", "kind"): (1, "a cache of the stored machine record (machine.json)"),
    ("report/generalization.py", "repeat"): (1, "an audit's entry by name (typed AuditEntry values)"),
    ("report/generation.py", "p90"): (2, "a percentile by name (typed float values of a result section)"),
    ("report/site.py", "chip"): (1, "a published bundle's figure per denominator (float values)"),
    ("report/site.py", "usd"): (1, "a published bundle's figure per denominator (float values)"),
}
"""The ``.get("key")`` reads left in the seam, (file, key) -> (reads, why): raw run or bundle files, or
typed values by name."""


def key_reads(source: str) -> list[str]:
    """The constant key of every ``x.get("key")`` in ``source``, once per read, sorted."""
    return sorted(
        node.args[0].value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    )


def test_report_reads_what_normalize_hands_it_by_attribute() -> None:
    found = sorted(
        (str(path.relative_to(PACKAGE)), key)
        for folder in SEAM
        for path in folder.rglob("*.py")
        for key in key_reads(path.read_text())
    )
    assert found == sorted(key for key, (reads, _) in RAW_READS.items() for _ in range(reads))


def test_the_key_scan_finds_a_planted_document_read() -> None:
    planted = (
        "def share(normalized):\n"
        "    roofline = normalized.get('roofline') or {}\n"
        "    return roofline.get('share_of_peak', key), f'{roofline.get(\"suspect\")}'\n"
    )
    assert key_reads(planted) == ["roofline", "share_of_peak", "suspect"]
