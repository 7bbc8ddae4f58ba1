"""Readers use a result's typed fields: no ``.get("...")`` or ``["..."]`` into an untyped part of a result
outside the modules that own it (``results.py`` and ``sections.py``: the stored form; ``audits/``: the
audits judge their own evidence), and ``Result`` (with its ``Head``) keeps at most one
``Mapping[str, Any]`` field (``settings``: the stack's and the run's own knobs)."""

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
    assert hints["audit"].__args__[0].__name__ == "AuditSection"
