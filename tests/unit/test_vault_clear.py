"""The runner clears the vaults of LoadGen tests a cell process left running (``vault.clear``): each
one, with its logs and a folder a stack made unreadable in it; a link of a vault's name is neither
followed nor removed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from accelbench.scenarios import vault

CLEAR_WITHOUT_ROOTS_REACH = (
    "import sys; from pathlib import Path; from accelbench.sut import hardening; "
    "from accelbench.scenarios import vault; hardening.drop_capabilities(); "
    "print(vault.clear(Path(sys.argv[1])))"
)


def _left_vault(log_dir: Path, name: str) -> Path:
    """A vault as a test left behind: where ``vault.sealed`` puts it, of its mode, still holding its logs."""
    left = log_dir.parent.parent / f"{vault.VAULT_NAME}-{name}"
    left.parent.mkdir(parents=True, exist_ok=True)
    os.mkdir(left, vault.VAULT_MODE)
    left.chmod(vault.VAULT_MODE)
    (left / "0123").mkdir()
    (left / "0123" / "mlperf_log_detail.txt").write_text("seeds")
    return left


def test_every_left_vault_is_removed_and_nothing_else(tmp_path: Path) -> None:
    cell = tmp_path / "cell"
    first = _left_vault(cell / "loadgen" / "a0-t0", "a")
    second = _left_vault(cell / "loadgen" / "a0-t0-search" / "p0", "b")
    locked = first / "locked"
    locked.mkdir()
    (locked / "x").write_text("kept by a stack")
    locked.chmod(0)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "results.json").write_text("{}")
    os.symlink(outside, cell / f"{vault.VAULT_NAME}-link")
    (cell / "result.json").write_text("{}")
    assert first.stat().st_mode & 0o777 == vault.VAULT_MODE

    cleared = subprocess.run(  # as the runner without root's reach (which lists any folder anyway)
        [sys.executable, "-c", CLEAR_WITHOUT_ROOTS_REACH, str(cell)], capture_output=True, text=True
    )
    assert cleared.returncode == 0, cleared.stderr
    assert cleared.stdout.strip() == "2"

    assert not first.exists() and not second.exists()
    assert (outside / "results.json").read_text() == "{}"  # the link is not followed
    assert (cell / f"{vault.VAULT_NAME}-link").is_symlink()
    assert (cell / "result.json").exists()
    assert vault.clear(cell) == 0
