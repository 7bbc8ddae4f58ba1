"""Round 2 of the fuzz (issue 32): the classes an independent campaign found. Special files where a file
is expected (FIFO, devices, a directory), nesting deeper than any parser's stack, numbers at the edges of
float and of the stated integer ranges, and ``-o`` paths inside the store: each is one line naming the
file or option (exit 2), never a hang, a traceback or a change to the store."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accelbench.inputs import RANGES, SEED_LIMIT
from tests.fuzz.harness import expect_user_error, tree_digest

FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
FILE_COMMANDS = {
    "config": ["run", "--no-probe", "--config", "{file}"],
    "chips file": ["history", "--chips", "{file}"],
    "MLPerf history CSV": ["import-mlperf", "{file}"],
}
SPECIAL = st.sampled_from(["/dev/zero", "/dev/urandom", "/dev/null", "fifo", "folder"])
FLOAT_EDGES = st.sampled_from(
    ["1e308", "-1e308", "5e-324", "-5e-324", "1e309", "inf", "-inf", "nan", "-0.0", "0"]
)


@contextmanager
def _special(kind: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(kind) if kind.startswith("/") else Path(tmp) / kind
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "folder":
            path.mkdir()
        yield path


def _args(command: list[str], path: Path, store: Path) -> list[str]:
    return [part.replace("{file}", str(path)) for part in command] + ["--store", str(store)]


@FUZZ
@given(what=st.sampled_from(sorted(FILE_COMMANDS)), kind=SPECIAL)
def test_a_special_file_is_refused(store: Path, what: str, kind: str) -> None:
    if what == "MLPerf history CSV" and kind == "folder":
        return  # import-mlperf FOLDER imports result logs: a folder is a valid input there
    before = tree_digest(store)
    with _special(kind) as path:
        done = expect_user_error("input-special", _args(FILE_COMMANDS[what], path, store), str(path))
    assert f"{what} {path} is not a regular file" in done.stderr
    assert tree_digest(store) == before


@FUZZ
@given(
    what=st.sampled_from(["config", "chips file"]),
    depth=st.integers(65, 60_000),
    brackets=st.sampled_from("[{"),
)
def test_deep_nesting_is_one_line(store: Path, what: str, depth: int, brackets: str) -> None:
    closing = "]" if brackets == "[" else "}"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "deep.toml"
        path.write_text(f"a = {brackets * depth}{closing * depth}\n")
        done = expect_user_error("input-nesting", _args(FILE_COMMANDS[what], path, store), str(path))
    assert "nests more than 64 levels" in done.stderr


@FUZZ
@given(option=st.sampled_from(["--timeout-s"]), value=FLOAT_EDGES)
def test_float_edges_of_a_timeout(store: Path, option: str, value: str) -> None:
    before = tree_digest(store)
    for command in (["run", "--suite", "tiny", "--no-probe"], ["tune", "os:getcwd"]):
        expect_user_error("input-float-edge", [*command, option, value, "--store", str(store)], "timeout_s")
    assert tree_digest(store) == before


@FUZZ
@given(
    value=FLOAT_EDGES.filter(lambda v: v != "5e-324") | st.floats(min_value=86400.001, allow_infinity=True)
)
def test_a_probe_budget_must_end(value: object) -> None:
    expect_user_error("input-probe-budget", ["probe", "--budget-s", str(value)], "--budget-s")


INTEGERS = {
    "--seed": ("seed", st.integers(max_value=-1) | st.integers(min_value=SEED_LIMIT, max_value=10**400)),
    "--variant-seed": ("variant_seed", st.integers(min_value=SEED_LIMIT, max_value=10**400)),
    "--variants": ("variants", st.integers(min_value=int(RANGES["variants"][1]) + 1, max_value=10**30)),
    "--threads": ("threads", st.integers(min_value=int(RANGES["threads"][1]) + 1, max_value=10**30)),
    "--batch": ("batch", st.integers(min_value=int(RANGES["batch"][1]) + 1, max_value=10**30)),
    "--runs": ("runs", st.integers(min_value=int(RANGES["runs"][1]) + 1, max_value=10**30)),
}


@FUZZ
@given(option=st.sampled_from(sorted(INTEGERS)), data=st.data())
def test_integers_outside_their_stated_range(store: Path, option: str, data: st.DataObject) -> None:
    name, values = INTEGERS[option]
    value = data.draw(values)
    before = tree_digest(store)
    args = ["run", "--suite", "tiny", "--no-probe", "--store", str(store), f"{option}={value}"]
    done = expect_user_error("input-int-range", args, name)
    assert "must be an integer from" in done.stderr or "must be >= 0" in done.stderr
    assert tree_digest(store) == before


PARTS = st.lists(
    st.sampled_from(["runs", "fuzz-run", "cache", "..", ".", "x.csv", "results.sqlite"]), max_size=4
)


@FUZZ
@given(
    parts=PARTS,
    command=st.sampled_from([["export"], ["export", "--format", "json"], ["report"]]),
    force=st.booleans(),
)
def test_an_output_inside_the_store(store: Path, parts: list[str], command: list[str], force: bool) -> None:
    target = store.joinpath(*parts)
    if not (target.resolve() == store.resolve() or store.resolve() in target.resolve().parents):
        return  # '..' led outside: not this test's case
    before = tree_digest(store)
    args = [*command, "fuzz-run", "-o", str(target), "--store", str(store), *(["--force"] if force else [])]
    assert "inside the result store" in expect_user_error("output-in-store", args, f"-o {target}").stderr
    assert tree_digest(store) == before


@FUZZ
@given(option=st.sampled_from(["--stacks", "--workloads", "--scenarios"]), length=st.integers(129, 20_000))
def test_a_name_of_any_length_is_one_short_line(store: Path, option: str, length: int) -> None:
    args = ["run", "--no-probe", "--store", str(store), option, "n" * length]
    done = expect_user_error("input-name-length", args, "longer than 128 characters")
    assert len(done.stderr) < 700


@FUZZ
@given(length=st.integers(256, 100_000))
def test_a_model_name_of_any_length_is_one_short_line(store: Path, length: int) -> None:
    done = expect_user_error(
        "input-model-length", ["tune", "m:" + "f" * length, "--store", str(store)], "model"
    )
    assert len(done.stderr) < 700


@FUZZ
@given(command=st.sampled_from([["run", "--suite", "tiny", "--no-probe"], ["show"], ["export", "-o", "{out}"],
                                ["report", "-o", "{out}"], ["store", "check"]]))  # fmt: skip
def test_a_store_database_that_is_a_fifo(command: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        store.mkdir()
        os.mkfifo(store / "results.sqlite")
        args = [part.replace("{out}", str(Path(tmp) / "out")) for part in command] + ["--store", str(store)]
        expect_user_error("store-fifo", args, str(store))
        assert sorted(p.name for p in store.iterdir()) == ["results.sqlite"]
