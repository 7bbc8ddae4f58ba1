"""No silent waiting: a store held by another process is said within a second, naming its pid, and
waited for a bounded time; a store on read-only media is read, and a write to it fails in one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from accelbench.errors import UserError
from accelbench.store import open_store
from accelbench.store.locking import LOCK_WAIT_ENV
from tests.fuzz.harness import tree_digest

ROOT = Path(__file__).parents[2]
HOLD_FLOCK = "import fcntl,os,sys,time; h=os.open(sys.argv[1],os.O_RDONLY|os.O_DIRECTORY); " + (
    "fcntl.flock(h,fcntl.LOCK_EX)"
)
HOLD_WRITE = "import sqlite3,sys,time; d=sqlite3.connect(sys.argv[1],isolation_level=None); " + (
    "d.execute('BEGIN IMMEDIATE')"
)


def _holder(code: str, target: Path) -> subprocess.Popen[str]:
    """A process that takes the lock, says so, and holds it for 20 s (killed by the test)."""
    child = subprocess.Popen(
        [sys.executable, "-c", f"{code}; print('held', flush=True); time.sleep(20)", str(target)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "held"
    return child


def _env(wait_s: float) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), LOCK_WAIT_ENV: str(wait_s)}


def test_a_held_store_folder_is_said_at_once_and_waited_for_boundedly(store: Path, tmp_path: Path) -> None:
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    holder = _holder(HOLD_FLOCK, copy)
    try:
        command = [sys.executable, "-m", "accelbench", "show", "--store", str(copy)]
        started = time.monotonic()
        shown = subprocess.Popen(
            command, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env(2)
        )
        assert shown.stderr is not None
        first = shown.stderr.readline()
        said_s = time.monotonic() - started
        rest = shown.communicate(timeout=30)[1]
        waited_s = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    assert first.startswith(f"accelbench: store locked by pid {holder.pid}, retrying for 2 s"), first
    assert said_s < 1.0 + 1.5, said_s  # the line comes before the wait (plus start-up on a busy machine)
    assert shown.returncode == 2
    assert (
        rest.strip()
        == f"accelbench: error: result store {copy} is still locked by pid {holder.pid} after 2 s"
    )
    assert 2.0 <= waited_s < 10, waited_s


def test_a_writer_waits_for_another_writers_transaction_boundedly(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    monkeypatch.setenv(LOCK_WAIT_ENV, "1")
    with open_store(copy) as opened:
        run_id = opened.run_ids()[0]
        holder = _holder(HOLD_WRITE, copy / "results.sqlite")
        try:
            started = time.monotonic()
            with pytest.raises(UserError, match=f"still locked by pid {holder.pid} after 1 s"):
                opened.set_run_status(run_id, "interrupted")
            waited_s = time.monotonic() - started
        finally:
            holder.kill()
            holder.wait()
        opened.set_run_status(run_id, "complete")  # free again: the write goes through
    assert f"store locked by pid {holder.pid}, retrying for 1 s" in capsys.readouterr().err
    assert 1.0 <= waited_s < 5, waited_s


def _read_only_mount_works(folder: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = f"mount --bind {folder} {folder} && mount -o remount,bind,ro {folder}"
    return (
        subprocess.run(["unshare", "-m", "sh", "-c", probe], capture_output=True, check=False).returncode == 0
    )


READ_ONLY_COMMANDS = {
    "show": (["show"], 0),
    "show --json": (["show", "--json"], 0),
    "store check": (["store", "check"], 0),
    "report": (["report", "-o", "{tmp}/report.html"], 0),
    "store check --repair": (["store", "check", "--repair"], 2),
    "run": (["run", "--suite", "tiny", "--stacks", "null", "--no-probe"], 2),
}


def test_a_store_on_read_only_media_is_read_and_never_written(store: Path, tmp_path: Path) -> None:
    """The store bind-mounted read-only in a private mount namespace (root only; skipped elsewhere):
    the reading commands answer (exit 0), the writing ones fail in one line (exit 2), nothing changes."""
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    if not _read_only_mount_works(copy):
        pytest.skip("no private read-only bind mount here (needs unshare and root)")
    before = tree_digest(copy)
    for name, (args, code) in READ_ONLY_COMMANDS.items():
        argv = [a.replace("{tmp}", str(tmp_path)) for a in args] + ["--store", str(copy)]
        script = f'mount --bind {copy} {copy} && mount -o remount,bind,ro {copy} && exec "$@"'
        command = ["unshare", "-m", "sh", "-c", script, "sh", sys.executable, "-m", "accelbench", *argv]
        done = subprocess.run(command, capture_output=True, text=True, env=_env(2), timeout=120, check=False)
        assert done.returncode == code, (name, done.stderr[-800:])
        assert "Traceback" not in done.stderr, (name, done.stderr)
        if code:
            assert done.stderr.strip() == f"accelbench: error: result store directory {copy} is not writable"
    assert tree_digest(copy) == before
