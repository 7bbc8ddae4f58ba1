"""Run the accelbench CLI in this process on a fuzzed input and judge its answer.

``outcome(args)`` calls ``accelbench.cli.main`` as the console script does (SystemExit caught, output
captured); an exception that escapes it is what a user would see as a traceback, and fails the test.
``expect_user_error`` asserts exit code 2 and one line on stderr naming the file (or option). With
``ACCELBENCH_RELIABILITY_LOG`` set, each judged input is appended there as one JSON line
(``benchmarks/reliability.py`` counts them).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sys
import tempfile
import traceback
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

from accelbench.cli import main

LOG_ENV = "ACCELBENCH_RELIABILITY_LOG"


@dataclass(frozen=True, slots=True)
class Outcome:
    """Exit code and captured output of one CLI call; ``traceback`` when an exception escaped."""

    code: int
    stdout: str
    stderr: str
    traceback: str = ""


def outcome(args: list[str]) -> Outcome:
    """``accelbench ARGS`` in this process."""
    out, err = io.StringIO(), io.StringIO()
    argv, sys.argv = sys.argv, ["accelbench", *args]
    shown = ""
    try:
        with redirect_stdout(out), redirect_stderr(err):
            main()
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except Exception:  # escaped: the user would see this traceback
        code, shown = 1, traceback.format_exc()
    finally:
        sys.argv = argv
    return Outcome(code, out.getvalue(), err.getvalue(), shown)


def tree_digest(folder: Path) -> str:
    """SHA-256 over the names and bytes of every file under ``folder`` (missing: ``absent``)."""
    if not folder.exists():
        return "absent"
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _log(kind: str, result: Outcome, one_line: bool) -> None:
    target = os.environ.get(LOG_ENV)
    if target:
        entry = {"kind": kind, "code": result.code, "one_line": one_line, "traceback": bool(result.traceback)}
        with open(target, "a", encoding="utf-8") as stream:
            stream.write(json.dumps(entry) + "\n")


def expect_user_error(kind: str, args: list[str], names: str) -> Outcome:
    """Exit code 2, no traceback, and exactly one stderr line that names ``names``."""
    result = outcome(args)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    one_line = len(lines) == 1 and lines[0].startswith("accelbench: error: ") and names in lines[0]
    _log(kind, result, one_line)
    assert not result.traceback, result.traceback
    assert result.code == 2, (result.code, result.stderr[-2000:], result.stdout[-500:])
    assert one_line, result.stderr
    return result


def expect_usage_error(kind: str, args: list[str], option: str) -> Outcome:
    """A value the option parser refuses: exit code 2, no traceback, the option named."""
    result = outcome(args)
    _log(kind, result, True)
    assert not result.traceback, result.traceback
    assert result.code == 2, (result.code, result.stderr[-2000:])
    assert "Traceback" not in result.stderr and (
        option in result.stderr or "accelbench: error" in result.stderr
    )
    return result


def expect_no_traceback(kind: str, args: list[str], codes: tuple[int, ...] = (0,)) -> Outcome:
    """A command that must carry on (e.g. skipping a corrupt record): no traceback, an exit code in
    ``codes``, and no more than one line on stderr per warning."""
    result = outcome(args)
    _log(kind, result, "Traceback" not in result.stderr)
    assert not result.traceback, result.traceback
    assert result.code in codes, (result.code, result.stderr[-2000:], result.stdout[-500:])
    assert "Traceback" not in result.stderr, result.stderr
    return result


@contextmanager
def copied_store(store: Path) -> Iterator[Path]:
    """A throw-away copy of ``store``, for a fuzz example to damage."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "store"
        shutil.copytree(store, copy)
        yield copy
