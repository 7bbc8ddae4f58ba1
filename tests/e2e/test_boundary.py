"""The stack's process holds nothing of the harness: a plugin that searches everything it can reach
(``tests.e2e.planted_boundary``) finds no harness object, no input before its call, no seed, and cannot
read the harness's processes; the folder of LoadGen's logs is sealed while a test runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from accelbench.audits import off_calls
from accelbench.audits.verdict import INCONCLUSIVE, PASS
from accelbench.errors import CellError
from accelbench.scenarios import vault
from tests.e2e.cli import installed_plugins

SEED_LINE = re.compile(r'"requested_(?:qsl|sample_index|schedule)_rng_seed", "value": (\d+)')
READER = {
    "planted-harness-reader": "tests.e2e.planted_boundary:HarnessReader",
    "planted-background-worker": "tests.e2e.planted_boundary:BackgroundWorker",
}


@pytest.fixture(scope="module")
def reader_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    """One tiny single-stream run of the harness reader installed as a plugin, through the CLI."""
    root = tmp_path_factory.mktemp("boundary")
    env = installed_plugins(root / "site", "planted-boundary", "accelbench.stacks", READER)
    stacks = "planted-harness-reader,planted-background-worker,torch-eager"
    args = ["--suite", "tiny", "--workloads", "resnet50", "--stacks", stacks, "--scenarios", "single-stream"]
    cell_dir, found, results = _planted_run(env, root / "store", args)
    found["results"] = {r["cell"]["stack"]: r for r in results}
    return cell_dir, found


def _planted_run(
    env: dict[str, str], store: Path, args: list[str]
) -> tuple[Path, dict[str, object], list[dict[str, object]]]:
    """``accelbench run`` of ``args`` with the planted plugins of ``env``: the cell folder of the reader's
    SUT, what it found (``sut/found.json``) and the stored results (``show --json``)."""
    done = subprocess.run(
        [sys.executable, "-m", "accelbench", "run", *args, "--no-probe", "--store", str(store)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (found_path,) = store.glob("runs/*/cells/*/sut/found.json")
    shown = subprocess.run(
        [sys.executable, "-m", "accelbench", "show", "--json", "--include-unverified", "--store", str(store)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    return found_path.parents[1], json.loads(found_path.read_text()), json.loads(shown.stdout)["results"]


def test_the_reader_finds_no_harness_object_and_no_input_before_its_call(
    reader_run: tuple[Path, dict[str, object]],
) -> None:
    _, found = reader_run
    assert found["calls"] > 100  # it was called through the whole timed run (and searched meanwhile)
    assert found["harness_objects"] == []  # no CellSpec, sample sets, audit feed, LoadGen SUT
    assert found["calls_found_before"] == 0
    assert found["vault_listed"] == []  # its walk of the run folder could not list the sealed logs
    assert [n for n in found["environment"] if n != "ACCELBENCH_TVM_TRIALS"] == []  # type: ignore[attr-defined]


def test_the_reader_cannot_read_the_cell_nor_the_runner(reader_run: tuple[Path, dict[str, object]]) -> None:
    _, found = reader_run
    ancestors = dict(found["ancestors"])  # type: ignore[call-overload]
    readable: dict[str, list[str]] = found["ancestor_readable"]  # type: ignore[assignment]
    chain = list(ancestors)  # its parent first: the trial or cell process, ..., the runner, ...
    runner = next(i for i, pid in enumerate(chain) if "-m accelbench run" in ancestors[pid])
    template = [pid for pid in chain[1:runner] if "forkserver import main" in ancestors[pid]][-1:]
    harness = [pid for pid in chain[: runner + 1] if pid not in template]
    assert len(harness) >= 2  # the process that started it, the runner
    for pid in harness:  # its memory, the paths of its open files, its folder; its environment holds no
        # seed (the seed test) and the kernel shows any process's environ and maps to root (measured)
        assert not {"mem", "fd", "cwd"} & set(readable[pid]), (ancestors[pid], readable[pid])


def test_the_reader_finds_no_seed_of_a_test_that_has_not_ended(
    reader_run: tuple[Path, dict[str, object]],
) -> None:
    cell_dir, found = reader_run
    details = sorted(cell_dir.glob("loadgen/*/mlperf_log_detail.txt"))
    assert details
    for detail in details:
        seeds = set(SEED_LINE.findall(detail.read_text()))
        ended = detail.stat().st_mtime
        assert seeds
        for snapshot in found["snapshots"]:  # type: ignore[attr-defined]
            if snapshot["time"] < ended - 1.0:
                assert not seeds & set(snapshot["seeds"]), snapshot
    assert not list(cell_dir.glob(vault.VAULT_NAME + "*"))  # no folder a reader cannot list is left behind


LIST_AS_A_SUT = (
    "import os, sys; from accelbench.sut import hardening; hardening.drop_capabilities(); "
    "os.listdir(sys.argv[1])"
)


def test_a_vault_cannot_be_listed_and_one_opened_while_the_test_ran_is_caught(tmp_path: Path) -> None:
    log_dir = tmp_path / "cell" / "loadgen" / "a0-t0"
    with vault.sealed(log_dir) as inside:
        (inside / "mlperf_log_detail.txt").write_text("seeds")
        listing = subprocess.run(
            [sys.executable, "-c", LIST_AS_A_SUT, str(inside.parent)], capture_output=True, text=True
        )
        assert listing.returncode != 0 and "PermissionError" in listing.stderr  # root too, once it is a SUT
    assert (log_dir / "mlperf_log_detail.txt").read_text() == "seeds"
    opened = "boundary audit: the folder of LoadGen's logs was opened up"
    with pytest.raises(CellError, match=opened), vault.sealed(log_dir) as inside:
        inside.parent.chmod(0o755)  # what a stack must do to list it
        inside.parent.chmod(vault.VAULT_MODE)  # and put back: the status-change time still moved


def test_the_sut_process_holds_no_ptrace_capability_and_harness_processes_are_undumpable() -> None:
    probe = (
        "from accelbench.sut import hardening; hardening.drop_capabilities(); "
        "print(hardening.holds_ptrace_capability(), hardening.make_undumpable(), hardening.is_undumpable())"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True", "True"]


def test_the_sut_process_cpu_is_recorded_with_every_result(
    reader_run: tuple[Path, dict[str, object]],
) -> None:
    results: dict[str, dict[str, object]] = reader_run[1]["results"]  # type: ignore[assignment]
    for stack in ("planted-background-worker", "torch-eager"):
        used: dict[str, float] = results[stack]["settings"]["sut_process"]  # type: ignore[index]
        assert 0 < used["in_calls_s"] <= used["cpu_s"]
        assert used["off_calls_s"] == pytest.approx(used["cpu_s"] - used["in_calls_s"])


@pytest.mark.parametrize(("stack", "busy"), [("planted-background-worker", True), ("torch-eager", False)])
def test_cpu_spent_between_calls_is_seen(tmp_path: Path, stack: str, busy: bool) -> None:
    """Calls 20 ms apart (a server scenario's gaps): a thread working between them shows as CPU off the
    calls, and the ``off_calls`` audit leaves the cell unverified; an honest stack's pool does not."""
    from accelbench import registry, variants
    from accelbench.sut.environment import sut_environment
    from accelbench.sut.remote import SutProcess

    ref = READER.get(stack) or registry.STACKS[stack]
    sut = SutProcess(ref, tmp_path / "sut", sut_environment())
    try:
        workload = registry.instantiate(registry.WORKLOADS["resnet50"])
        example = variants.make_sample(workload, "tiny", 1, 0, None)
        request = {
            "workload_ref": registry.WORKLOADS["resnet50"],
            "workload": "resnet50",
            "size": "tiny",
            "seed": 0,
            "variant": "canonical",
            "input_names": ["image"],
            "batch": 1,
            "device": "cpu",
            "threads": 1,
            "work_dir": str(tmp_path / "sut"),
            "cache_dir": str(tmp_path),
        }
        session, _ = sut.prepare(request, example)
        start_s, in_calls_start_s = sut.cpu_s(), sut.cpu_in_calls_s
        for _ in range(50):
            session.infer(example)
            time.sleep(0.02)
        cpu_s = sut.cpu_s() - start_s
        off_calls_s = cpu_s - (sut.cpu_in_calls_s - in_calls_start_s)
    finally:
        sut.stop()
    assert (off_calls_s > 0.1) is busy, (off_calls_s, cpu_s)  # 1 s of gaps: up to 1 s busy, ~0 idle
    in_calls_s = cpu_s - off_calls_s
    assert off_calls.judge(cpu_s, in_calls_s) == (INCONCLUSIVE if busy else PASS), (off_calls_s, in_calls_s)


GENERATING_READER = {
    "planted-generating-reader": "tests.e2e.planted_boundary_llm:GeneratingHarnessReader",
}


@pytest.fixture(scope="module")
def generating_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    """One tiny-llama single-stream cell of the generating reader installed as a plugin, through the CLI."""
    from accelbench.generation.models import missing_packages

    if missing_packages():
        pytest.skip(f"llm extra missing: {missing_packages()}")
    root = tmp_path_factory.mktemp("boundary-llm")
    env = installed_plugins(
        root / "site", "planted-boundary-llm", "accelbench.generation_stacks", GENERATING_READER
    )
    args = ["--suite", "tiny", "--workloads", "tiny-llama", "--stacks", "planted-generating-reader"]
    args += ["--scenarios", "single-stream", "--rules", "quick"]
    cell_dir, found, results = _planted_run(env, root / "store", args)
    (found["result"],) = results
    return cell_dir, found


def test_the_generating_reader_finds_no_prompt_reply_salt_nor_harness_object(
    generating_run: tuple[Path, dict[str, object]],
) -> None:
    _, found = generating_run
    result: dict[str, object] = found["result"]  # type: ignore[assignment]
    assert result["status"] in ("ok", "unstable"), result["reason"]  # it answered honestly throughout
    assert found["calls"] > 64  # called through calibration, the timed run and the prefix-cache audit
    assert found["files_read"] > 0 and found["sequences"] > 100  # its searches saw files and token lists
    assert found["sent_found"] > 0  # and would have seen a prompt: those it had been sent already
    assert found["harness_objects"] == []  # no CellSpec, prompt feed, salt place, reference, LoadGen SUT
    assert found["calls_found_before"] == 0  # no prompt (fresh content, salt) before its query
    assert found["replies_checked"] > 10 and found["replies_found_before"] == 0  # no reference reply
    assert found["vault_listed"] == []
    assert [n for n in found["environment"] if n != "ACCELBENCH_TVM_TRIALS"] == []  # type: ignore[attr-defined]
    input_seed = str(result["settings"]["input_seed"])  # type: ignore[index]
    assert all(input_seed not in s["seeds"] for s in found["snapshots"])  # type: ignore[attr-defined]


def test_the_generating_reader_cannot_read_the_cell_nor_the_runner(
    generating_run: tuple[Path, dict[str, object]],
) -> None:
    _, found = generating_run
    ancestors = dict(found["ancestors"])  # type: ignore[call-overload]
    readable: dict[str, list[str]] = found["ancestor_readable"]  # type: ignore[assignment]
    chain = list(ancestors)
    runner = next(i for i, pid in enumerate(chain) if "-m accelbench run" in ancestors[pid])
    template = [pid for pid in chain[1:runner] if "forkserver import main" in ancestors[pid]][-1:]
    harness = [pid for pid in chain[: runner + 1] if pid not in template]
    assert len(harness) >= 2
    for pid in harness:
        assert not {"mem", "fd", "cwd"} & set(readable[pid]), (ancestors[pid], readable[pid])


def test_the_generating_reader_finds_no_loadgen_seed_of_a_test_that_has_not_ended(
    generating_run: tuple[Path, dict[str, object]],
) -> None:
    cell_dir, found = generating_run
    details = sorted(cell_dir.glob("loadgen*/**/mlperf_log_detail.txt"))
    assert details
    for detail in details:
        seeds = set(SEED_LINE.findall(detail.read_text()))
        assert seeds  # drawn for this test (``secrets``), not MLPerf's fixed ones
        for snapshot in found["snapshots"]:  # type: ignore[attr-defined]
            if snapshot["time"] < detail.stat().st_mtime - 1.0:
                assert not seeds & set(snapshot["seeds"]), snapshot


def test_a_first_token_frame_sent_ahead_of_its_call_ends_the_cell(tmp_path: Path) -> None:
    """The SUT process's frames carry the call's secret number: one forged ahead for the next call
    (``planted-ahead-sender``) is refused, never read as that call's first token."""
    from accelbench.generation.base import GenerationContext
    from accelbench.generation.models import load_model, missing_packages
    from accelbench.sut import generation_remote
    from accelbench.sut.environment import sut_environment
    from accelbench.sut.remote import SutFailure, SutProcess

    if missing_packages():
        pytest.skip(f"llm extra missing: {missing_packages()}")
    model = load_model("tiny-llama", tmp_path)
    ref = "tests.e2e.planted_boundary_llm:AheadSender"
    sut = SutProcess(ref, tmp_path / "sut", sut_environment())
    try:
        generator = generation_remote.prepare(sut, model, GenerationContext(tmp_path / "llm-stacks"))
        reply = generator.generate([1, 2, 3, 4, 5], 8)
        assert reply.first_reported == reply.tokens[0] and 0 < reply.wire_s < reply.first_token_s
        time.sleep(0.3)  # the forged frames are in the wire
        with pytest.raises(SutFailure, match="no call in flight"):
            generator.generate([1, 2, 3, 4, 6], 8)
    finally:
        sut.stop()
