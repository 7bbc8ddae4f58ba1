"""Fuzzed command-line option values: each bad one is exit code 2 with the problem named, no traceback,
and the store untouched."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accelbench import registry
from accelbench.scenarios.rules import SCENARIOS
from tests.fuzz.harness import expect_usage_error, expect_user_error, tree_digest

FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
NAME = st.text(st.characters(codec="utf-8", exclude_characters=",\x00"), min_size=1, max_size=30)
KNOWN = {
    "--stacks": set(registry.table("stack")) | {"all"},
    "--workloads": set(registry.table("workload")),
    "--scenarios": set(SCENARIOS),
    "--devices": set(),
    "--rules": {"quick", "standard", "official"},
    "--size": {"tiny", "standard"},
    "--suite": {"default", "quick", "tiny", "expressiveness"},
}


def _is_bad_name(option: str, text: str) -> bool:
    parts = [p.strip() for p in text.split(",")]
    if option == "--devices":
        return any(p and p != "cpu" and not p.startswith("cuda:") for p in parts)
    return any(p and p not in KNOWN[option] for p in parts) or not any(parts)


@FUZZ
@given(option=st.sampled_from(sorted(KNOWN)), text=NAME)
def test_unknown_names(store: Path, option: str, text: str) -> None:
    if not _is_bad_name(option, text) or text.startswith("-"):
        return
    before = tree_digest(store)
    result = expect_user_error("cli-name", ["run", "--store", str(store), "--no-probe", option, text], "")
    assert tree_digest(store) == before, result.stderr


NUMBERS = {
    "--timeout-s": st.floats(max_value=0, allow_nan=False) | st.just(float("nan")) | st.just(float("inf")),
    "--threads": st.integers(max_value=-1),
    "--batch": st.integers(max_value=0),
    "--variants": st.integers(max_value=-1),
    "--runs": st.integers(max_value=0),
    "--nproc": st.integers(max_value=0),
    "--variant-seed": st.integers(max_value=-1),
}


@FUZZ
@given(option=st.sampled_from(sorted(NUMBERS)), data=st.data())
def test_out_of_range_numbers(store: Path, option: str, data: st.DataObject) -> None:
    value = data.draw(NUMBERS[option])
    before = tree_digest(store)
    expect_user_error("cli-number", ["run", "--store", str(store), "--no-probe", option, repr(value)], "")
    assert tree_digest(store) == before


@FUZZ
@given(option=st.sampled_from(sorted(NUMBERS)), text=st.text(min_size=1, max_size=12))
def test_numbers_that_are_not_numbers(store: Path, option: str, text: str) -> None:
    try:
        float(text)
        return
    except ValueError:
        pass
    if text.startswith("-"):
        return
    before = tree_digest(store)
    expect_usage_error("cli-parse", ["run", "--store", str(store), option, text], option)
    assert tree_digest(store) == before


@FUZZ
@given(
    text=st.text(st.characters(codec="ascii"), min_size=1, max_size=20).filter(
        lambda t: "," in t or not t.isdigit()
    )
)
def test_batch_sweeps(store: Path, text: str) -> None:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if (parts and all(p.isdigit() and int(p) >= 1 for p in parts)) or text.startswith("-"):
        return
    before = tree_digest(store)
    expect_user_error(
        "cli-batch-sweep", ["run", "--store", str(store), "--no-probe", "--batch-sweep", text], ""
    )
    assert tree_digest(store) == before


@FUZZ
@given(
    command=st.sampled_from(["show", "export", "explain", "report"]),
    run_id=NAME.filter(lambda t: not t.startswith("-")),
)
def test_unknown_run_ids(store: Path, tmp_path_factory: object, command: str, run_id: str) -> None:
    if run_id == "fuzz-run":
        return
    args = [command, run_id] + (["fuzz-run/x"] if command == "explain" else [])
    before = tree_digest(store)
    expect_user_error("cli-run-id", [*args, "--store", str(store)], "")
    assert tree_digest(store) == before


@FUZZ
@given(
    args=st.sampled_from([["list"], ["export", "--format"], ["history", "--per"]]),
    value=NAME.filter(lambda t: not t.startswith("-")),
)
def test_unknown_choices(store: Path, args: list[str], value: str) -> None:
    if value in {
        "workloads",
        "stacks",
        "scenarios",
        "csv",
        "json",
        "chip",
        "transistor",
        "mm2",
        "watt",
        "dollar",
    }:
        return
    before = tree_digest(store)
    where = [] if args == ["list"] else ["--store", str(store)]
    expect_user_error("cli-choice", [*args, value, *where], "")
    assert tree_digest(store) == before
