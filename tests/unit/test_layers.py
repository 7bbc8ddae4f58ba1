"""The package's layers (``[tool.importlinter]`` in pyproject.toml): dependencies point one way, no
import cycle between the top-level modules and folders, and the check fails when one is planted."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "accelbench"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _layers() -> list[set[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return [{name.strip() for name in layer.split("|")} for layer in contract["layers"]]


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_layers_hold() -> None:
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "1 kept, 0 broken" in done.stdout


def test_every_top_level_module_and_folder_is_in_one_layer() -> None:
    units = {
        f"accelbench.{path.stem}"
        for path in PACKAGE.iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").is_file()
    }
    listed = [name for layer in _layers() for name in layer]
    assert sorted(listed) == sorted(set(listed))  # each once
    assert set(listed) == units


def test_the_architecture_drawing_names_every_layer_in_its_order() -> None:
    """docs/architecture.md's drawing lists the contract's layers top to bottom (a line may name only
    some of its layer's modules, and end in "...")."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    drawing = doc.split("```\n", 2)[1].split("```", 1)[0]
    drawn: list[set[str]] = []
    for line in drawing.splitlines():
        head = line.split("  ")[0].strip()
        names = {n.strip() for n in head.split("|") if n.strip() and n.strip() != "..."}
        if head.startswith("|"):  # the line above goes on
            drawn[-1] |= names
        elif head:
            drawn.append(names)
    contract = [{n.removeprefix("accelbench.") for n in layer} for layer in _layers()[1:]]  # not __main__
    assert len(drawn) == len(contract), (drawn, contract)
    for names, layer in zip(drawn, contract, strict=True):
        assert names <= layer and names, (names, layer)


@pytest.mark.parametrize(
    ("module", "planted", "broken"),
    [
        # a record importing the command line: the cycle cli -> results -> cli
        ("results.py", "import accelbench.cli", "accelbench.results -> accelbench.cli"),
        # chip facts reaching up into the report
        (
            "hardware/chips.py",
            "import accelbench.report.terminal",
            "accelbench.hardware.chips -> accelbench.report",
        ),
        # two siblings of one layer importing each other
        (
            "audits/verdict.py",
            "import accelbench.scenarios.rules",
            "accelbench.audits.verdict -> accelbench.scenarios",
        ),
    ],
)
def test_a_planted_upward_import_breaks_the_contract(
    tmp_path: Path, module: str, planted: str, broken: str
) -> None:
    copy = tmp_path / "tree"
    shutil.copytree(PACKAGE, copy / "accelbench", ignore=shutil.ignore_patterns("__pycache__", "data"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    target = copy / "accelbench" / module
    target.write_text(f"{target.read_text()}\n{planted}  # planted by the test\n")
    done = _lint(copy)
    assert done.returncode == 1, done.stdout[-3000:]
    assert "0 kept, 1 broken" in done.stdout
    assert broken in " ".join(done.stdout.split()), done.stdout[-3000:]
