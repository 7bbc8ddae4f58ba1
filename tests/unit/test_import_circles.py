"""No import circle between the modules of one package, lazy (function-level) imports included: a circle
closed by a lazy import still ties the modules together (import-linter checks the top-level layers)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "accelbench"


def _imports(source: str, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that ``source`` imports, at any depth of the file."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            named = {f"{node.module}.{alias.name}" for alias in node.names} & modules
            found |= named or ({node.module} & modules)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names} & modules
    return found


def circles(sources: dict[str, str]) -> list[tuple[str, ...]]:
    """Each circle of imports among sibling modules (same parent package) in ``sources`` (name -> text)."""
    modules = set(sources)
    graph = {name: _imports(text, modules) for name, text in sources.items()}
    found = set()
    for start in graph:
        parent = start.rpartition(".")[0]
        stack = [(start, (start,))]
        while stack:
            node, path = stack.pop()
            for following in graph[node]:
                if following.rpartition(".")[0] != parent:
                    continue
                if following == start:
                    found.add(tuple(sorted(path)))
                elif following not in path:
                    stack.append((following, (*path, following)))
    return sorted(found)


def _package_sources() -> dict[str, str]:
    sources = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        sources[name] = path.read_text()
    return sources


def test_no_package_has_an_import_circle() -> None:
    assert circles(_package_sources()) == []


def test_a_circle_closed_by_a_lazy_import_is_found() -> None:
    planted = {
        "pkg.energy": "def meter():\n    from pkg import rapl\n    return rapl\n",
        "pkg.rapl": "from pkg.energy import meter\n",
        "pkg.noise": "from pkg.rapl import meter\n",
    }
    assert circles(planted) == [("pkg.energy", "pkg.rapl")]
