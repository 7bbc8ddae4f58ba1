"""Every reader of the CLI against every class of hostile file, enumerated (``READERS`` x ``CLASSES``,
the full cross product), each class's values drawn by hypothesis.

Classes: a directory, a FIFO, a link to ``/dev/zero`` where the file should be; JSON (or TOML) nested
up to 3,000 deep; numbers of 1e308, 5e-324 and their kind; a path component over the file system's
name limit; the file read-only; the store held by another process's lock. Per case: no traceback, no
hang (an alarm at ``HANG_S``), an exit code the command documents (0 where a reader skips what it cannot
read with a warning, 1 only for ``store check`` finding a problem, else 2 with the file named), and a
read-only command leaves the store's bytes as they were. With ``ACCELBENCH_RELIABILITY_LOG`` set each
case is logged (``benchmarks/reliability.py``)."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accelbench.store.locking import LOCK_WAIT_ENV
from tests.fuzz.harness import Outcome, _log, outcome, tree_digest

HANG_S = 60
EXAMPLES = settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
CHIP = (Path(__file__).parent / "test_fuzz_files.py").read_text().split('CHIP = """', 1)[1].split('"""')[0]
CSV = (Path(__file__).parents[2] / "accelbench" / "data" / "mlperf_resnet_training.csv").read_text()
CSV_HEAD = "\n".join([*CSV.splitlines()[:1], CSV.splitlines()[1].replace("v0.5/", "v9.9/", 1)])


@dataclass(frozen=True, slots=True)
class Reader:
    """One file the CLI reads: where it lies (``in_store``: relative to the store), its format, the
    command that reads it, and the exit codes that command may answer a bad file with."""

    name: str
    where: str
    kind: str
    args: tuple[str, ...]
    codes: tuple[int, ...] = (2,)
    in_store: bool = True
    read_only: bool = True
    takes_store: bool = True


RUN = "fuzz-run"
READERS = (
    Reader("peaks.json/show", f"runs/{RUN}/peaks.json", "json", ("show", RUN), (0,)),
    Reader(
        "peaks.json/report", f"runs/{RUN}/peaks.json", "json", ("report", RUN, "-o", "{tmp}/r.html"), (0,)
    ),
    Reader("peaks.json/export", f"runs/{RUN}/peaks.json", "json", ("export", RUN, "-o", "{tmp}/e.csv"), (0,)),
    Reader("spec.json/store-check", f"runs/{RUN}/cells/c0/spec.json", "json", ("store", "check"), (0, 1)),
    Reader(
        "spec.json/bundle",
        f"runs/{RUN}/cells/c0/spec.json",
        "json",
        ("bundle", RUN, "-o", "{tmp}/b.zip"),
        (0,),
    ),
    Reader("results.sqlite/show", "results.sqlite", "db", ("show",)),
    Reader("results.sqlite/store-check", "results.sqlite", "db", ("store", "check")),
    Reader("config/run", "run.toml", "toml", ("run", "--no-probe", "--config", "{file}"), in_store=False),
    Reader("chips/history", "chips.toml", "chips", ("history", "--chips", "{file}"), in_store=False),
    Reader(
        "mlperf-csv/import", "rows.csv", "csv", ("import-mlperf", "{file}"), in_store=False, read_only=False
    ),
    Reader("bundle/verify", "b.tar.gz", "bundle", ("verify", "{file}"), in_store=False, takes_store=False),
    Reader(
        "sign-key/bundle", "id_ed25519", "key", ("bundle", RUN, "-o", "{tmp}/s.zip", "--sign-key", "{file}")
    ),
)
CLASSES = ("directory", "fifo", "dev-zero", "deep", "extreme-number", "long-name", "read-only", "locked")
EXTREMES = st.one_of(
    st.sampled_from([1e308, 5e-324, -1e308, 1.7976931348623157e308, 2.2250738585072014e-308]),
    st.floats(min_value=1e31, max_value=1e308),
    st.floats(min_value=5e-324, max_value=1e-31),
)


def _valid(kind: str) -> str:
    return {
        "json": '{"gemm_flops": 1.0}',
        "toml": '[run]\nsuite = "tiny"\nstacks = ["null"]\nworkloads = ["not-a-workload"]\n',
        "chips": CHIP,
        "csv": CSV_HEAD + "\n",
        "bundle": "",
        "key": "",
        "db": "",
    }[kind]


def _deep(kind: str, depth: int) -> str:
    nested = "[" * depth + "]" * depth
    return f"x = {nested}\n" if kind in ("toml", "chips") else nested


def _extreme(kind: str, value: float) -> str:
    if kind == "chips":
        return CHIP.replace("transistors_billion = 40", f"transistors_billion = {value!r}")
    if kind == "csv":
        header, row = CSV_HEAD.splitlines()
        cells = row.split(",")
        cells[header.split(",").index("time_min_from_logs")] = repr(value)
        return f"{header}\n{','.join(cells)}\n"
    if kind == "toml":
        return f'[run]\nsuite = "tiny"\ntimeout_s = {value!r}\n'
    return f'{{"gemm_flops": {value!r}, "cell": {{"workload": {value!r}}}}}'


@contextmanager
def _alarm(seconds: int) -> Iterator[None]:
    def hung(signum: int, frame: object) -> None:
        raise TimeoutError(f"hung for {seconds} s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def _held(folder: Path) -> Iterator[None]:
    """The store folder's flock held by a forked process (another pid, as a second command would)."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover -- the child only holds the lock until killed
        handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(handle, fcntl.LOCK_EX)
        os.write(write_end, b"x")
        signal.pause()
        os._exit(0)
    os.read(read_end, 1)
    try:
        yield
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        os.close(read_end)
        os.close(write_end)


def _plant(path: Path, case: str, kind: str, draw: Callable[[st.SearchStrategy[object]], object]) -> Path:
    """Make ``path`` the hostile file of class ``case``; the path to name on the command line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    if case == "directory":
        path.mkdir()
    elif case == "fifo":
        os.mkfifo(path)
    elif case == "dev-zero":
        path.symlink_to("/dev/zero")
    elif case == "deep":
        path.write_text(_deep(kind, int(draw(st.integers(65, 3000)))))  # type: ignore[call-overload]
    elif case == "extreme-number":
        path.write_text(_extreme(kind, float(draw(EXTREMES))))  # type: ignore[arg-type]
    elif case == "long-name":
        return path.parent / ("n" * int(draw(st.integers(256, 400)))) / path.name  # type: ignore[call-overload]
    elif case in ("read-only", "locked"):
        path.write_text(_valid(kind))
        path.chmod(0o444)
    return path


def _allowed(reader: Reader, case: str) -> tuple[int, ...]:
    """A read-only or locked file that is valid may be read (0); a store whose lock is held is 2."""
    if case == "locked":
        return (2,) if reader.in_store else (0, 2)
    if case == "read-only":
        return (0, 2, *reader.codes)
    return (2, *reader.codes)


def _judge(reader: Reader, case: str, result: Outcome, changed: bool) -> None:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    _log(f"readers:{case}", result, "Traceback" not in result.stderr)
    assert not result.traceback, result.traceback
    assert "Traceback" not in result.stderr + result.stdout, result.stderr[-2000:]
    assert result.code in _allowed(reader, case), (reader.name, case, result.code, result.stderr[-1500:])
    if result.code == 2:
        assert lines and lines[-1].startswith("accelbench: error: "), lines
    assert not (reader.read_only and changed), (reader.name, case, "the store changed")


@pytest.mark.parametrize("case", CLASSES)
@pytest.mark.parametrize("reader", READERS, ids=[r.name for r in READERS])
@EXAMPLES
@given(data=st.data())
def test_every_reader_against_every_class(
    store: Path, reader: Reader, case: str, data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "store"
        shutil.copytree(store, copy)
        target = _plant((copy if reader.in_store else Path(tmp)) / reader.where, case, reader.kind, data.draw)
        if reader.in_store and case == "long-name":
            copy = Path(tmp) / ("s" * 300)
        args = [a.replace("{file}", str(target)).replace("{tmp}", tmp) for a in reader.args]
        before = _digest(copy)
        os.environ[LOCK_WAIT_ENV] = "0.5"
        try:
            with _alarm(HANG_S), _held(copy) if case == "locked" and reader.in_store else _nothing():
                result = outcome([*args, "--store", str(copy)] if reader.takes_store else args)
        finally:
            del os.environ[LOCK_WAIT_ENV]
        after = _digest(copy)
        _judge(reader, case, result, before != after)


def _digest(folder: Path) -> str:
    """``tree_digest``, or ``absent`` for a folder that cannot exist (a name over the limit)."""
    try:
        return tree_digest(folder) if folder.is_dir() else "absent"
    except OSError:
        return "absent"


@contextmanager
def _nothing() -> Iterator[None]:
    yield
