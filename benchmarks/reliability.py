"""Reliability of the harness itself: fuzzed inputs, injected faults, kill -9 and resume.

Three parts, each as a user meets it:
- the fuzz tests (``tests/fuzz``, hypothesis) with every judged input logged: how many inputs, how many
  ended in a traceback instead of a one-line error;
- one run of the faulty and planted stacks (``tests/e2e/faulty.py``) beside the null stack: every fault
  must be stored with its own status, none lost, no traceback on the terminal;
- ``--kills`` SIGKILLs of ``accelbench run`` at seeded random points, each followed by ``--resume``
  (``tests/e2e/kill_resume.py``): the final run must hold the planned cells once each, nothing lost;
- ``--rounds`` of four writer processes (``tests/e2e/store_writer.py``) released at one instant on a new
  store, each registering its run and storing its records: every record of every writer must be there;
- user code that dies in ``accelbench tune module:function`` (``os:abort``, ``faulthandler:_sigsegv``,
  ``_thread:interrupt_main``): the CLI must exit 1 (nothing verified) with the cells' status (a parent
  crash otherwise), and no process that any command here started may outlive it (found by a marker in
  the environment);
- every reading command (``show``, ``export``, ``report``, ``store check``) on the store the kills left,
  and on an empty ``results.sqlite``: the store's bytes must not change.

Usage: ``python benchmarks/reliability.py [--kills 4] [--rounds 5] [--seed 2026]`` (a few minutes on 2
cores).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from accelbench.errors import UserError  # noqa: E402
from accelbench.store.check import check_store  # noqa: E402
from tests.e2e import kill_resume  # noqa: E402

WRITERS, RECORDS_PER_WRITER = 4, 20
"""Writer processes per concurrency round, and the records each stores."""
FAULTS = {
    "planted-crash": "crashed",
    "planted-hang": "timeout",
    "planted-raise": "crashed",
    "faulty-infer-raise": "crashed",
    "faulty-memory": "oom",
    "faulty-shape": "disqualified",
    "faulty-dtype": "refused",
    "faulty-chatty": "measured",
    "faulty-teardown": "measured",
}
"""Each injected fault and the status it must end in (``measured``: any measured status; ``refused``:
``quality_failed`` or ``disqualified``, whichever check catches it first)."""
MEASURED = ("ok", "unverified", "unstable", "disqualified", "invalid")


MARK_ENV = "ACCELBENCH_RELIABILITY_MARK"
"""Set in the environment of every command started here: a process that carries it after the commands
ended was left running by one of them."""
FUZZ_LIMIT_S = 3600
"""The fuzz tests take a few minutes; still running after this long is a hang."""
USER_CODE = ("os:abort", "faulthandler:_sigsegv", "_thread:interrupt_main")


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, MARK_ENV: str(os.getpid()), **extra}


def fuzz(log: Path) -> tuple[int, int, int, int]:
    """(inputs judged, tracebacks, pytest exit code, hangs) of the fuzz tests."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/fuzz"],
            cwd=ROOT, env=_env(ACCELBENCH_RELIABILITY_LOG=str(log)), capture_output=True, text=True,
            timeout=FUZZ_LIMIT_S,
        )  # fmt: skip
        code, hangs = done.returncode, 0
    except subprocess.TimeoutExpired:
        code, hangs = -1, 1
    entries = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return len(entries), sum(1 for e in entries if e["traceback"]), code, hangs


def per_class_source(log: Path) -> list[str]:
    """The logged fuzz inputs' classes, read before the temporary folder goes."""
    return [json.loads(line)["kind"] for line in log.read_text().splitlines()] if log.exists() else []


def per_class(kinds: list[str]) -> Counter[str]:
    """How many inputs each class of the fuzz (``readers:<class>``, ``toml``, ``chips``, ...) judged."""
    return Counter(kinds)


def user_code(store: Path) -> tuple[int, int, int]:
    """(functions tried, parent crashes, hangs) of ``tune`` on model functions that die."""
    crashes = hangs = 0
    for function in USER_CODE:
        command = [sys.executable, "-m", "accelbench", "tune", function, "--stacks", "torch-eager",
                   "--timeout-s", "60", "--store", str(store), "--json"]  # fmt: skip
        try:
            done = subprocess.run(command, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            hangs += 1
            continue
        statuses = (  # exit 1: no stack produced a verified result, said in one line
            {row["status"] for row in json.loads(done.stdout)["ranking"]} if done.returncode == 1 else set()
        )
        crashes += done.returncode != 1 or statuses != {"crashed"}
    return len(USER_CODE), crashes, hangs


def reads(store: Path, folder: Path) -> tuple[int, int]:
    """(reading commands run, how many changed the store's bytes) on ``store`` and an empty store."""
    from tests.fuzz.harness import tree_digest

    empty = folder / "empty-store"
    empty.mkdir(parents=True)
    (empty / "results.sqlite").touch()
    commands = [["show"], ["show", "--json"], ["export", "-o", str(folder / "e.csv"), "--force"],
                ["export", "--format", "json", "-o", str(folder / "e.json"), "--force"],
                ["report", "-o", str(folder / "r.html"), "--force"], ["store", "check"]]  # fmt: skip
    changed = 0
    for target in (store, empty):
        for command in commands:
            before = tree_digest(target)
            subprocess.run([sys.executable, "-m", "accelbench", *command, "--store", str(target)],
                           cwd=ROOT, env=_env(), capture_output=True, timeout=600)  # fmt: skip
            changed += tree_digest(target) != before
    return 2 * len(commands), changed


def left_running() -> list[str]:
    """Processes (pid and command) that carry this script's marker: started by a command that ended."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"{MARK_ENV}={os.getpid()}".encode() in environ:
            found.append(f"{proc.name}: {command[:80]}")
    return found


def faults(store: Path) -> tuple[int, int, int, list[str]]:
    """(faults injected, records lost, tracebacks on the terminal, wrong statuses) of one faulty run."""
    store.parent.mkdir(parents=True, exist_ok=True)
    config = store.parent / "limits.toml"
    config.write_text("[run]\nmem_limit_bytes = 2147483648\n")
    stacks = ",".join([*FAULTS, "null"])
    done = subprocess.run(
        [sys.executable, "-m", "tests.e2e.faulty", "run", "--suite", "tiny", "--workloads", "bert-base",
         "--scenarios", "single-stream", "--stacks", stacks, "--no-probe", "--timeout-s", "45",
         "--config", str(config), "--store", str(store), "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    results = json.loads(done.stdout)["results"] if done.returncode == 0 else []
    shown = json.dumps([{k: v for k, v in r.items() if k != "stderr_tail"} for r in results])
    tracebacks = done.stderr.count("Traceback") + shown.count("Traceback")  # a cell's own log tail is data
    by_stack = {r["cell"]["stack"]: r for r in results}
    wrong = [
        f"{stack}: {by_stack[stack]['status'] if stack in by_stack else 'missing'} (want {want})"
        for stack, want in FAULTS.items()
        if stack not in by_stack or not _status_fits(by_stack[stack]["status"], want)
    ]
    lost = len(FAULTS) + 1 - len(results)
    return len(FAULTS), lost, tracebacks, wrong


def _status_fits(status: str, want: str) -> bool:
    groups = {"measured": MEASURED, "refused": ("quality_failed", "disqualified")}
    return status in groups.get(want, (want,))


def kills(store: Path, count: int, seed: int) -> tuple[int, int, int, bool]:
    """(kills survived, records lost, duplicates, store check clean) of kill -9 and resume."""
    report = kill_resume.kill_and_resume(store, kills=count, seed=seed)
    keys = Counter(report.final_keys)
    duplicates = sum(n - 1 for n in keys.values())
    missing = len(kill_resume.planned_keys() - set(keys))
    checked = check_store(store)
    duplicates += sum(1 for p in checked.problems if p.kind == "duplicate")
    ok = report.final_exit_code == 0 and not missing and report.survivors == 0
    return (report.kills if ok else 0), report.records_lost + missing, duplicates, checked.clean


def concurrent(folder: Path, rounds: int) -> tuple[int, int, bool]:
    """(rounds survived, records lost, every store check clean) of writers racing on a new store."""
    survived, lost, clean = 0, 0, True
    for number in range(rounds):
        store, start_at = folder / f"store-{number}", time.time() + 3.0  # after every interpreter started
        command = [sys.executable, "-m", "tests.e2e.store_writer", str(store)]
        writers = [
            subprocess.Popen([*command, f"writer-{n}", str(RECORDS_PER_WRITER), str(start_at)], cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for n in range(WRITERS)
        ]  # fmt: skip
        codes = [writer.wait(timeout=300) for writer in writers]
        try:
            checked = check_store(store)
            records, round_clean = checked.records, checked.clean
        except UserError:  # a store the writers broke
            records, round_clean = 0, False
        lost += WRITERS * RECORDS_PER_WRITER - records
        clean = clean and round_clean
        survived += codes == [0] * WRITERS and round_clean and records == WRITERS * RECORDS_PER_WRITER
    return survived, lost, clean


def _clean(clean: bool) -> str:
    return "clean" if clean else "NOT clean"


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    os.environ[MARK_ENV] = str(os.getpid())  # every process started from here on carries it
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        inputs, fuzz_tracebacks, fuzz_code, hangs = fuzz(folder / "fuzz.jsonl")
        folder_log = per_class_source(folder / "fuzz.jsonl")
        injected, fault_lost, fault_tracebacks, wrong = faults(folder / "faults" / "store")
        survived, kill_lost, duplicates, clean = kills(folder / "kills", args.kills, args.seed)
        raced, race_lost, race_clean = concurrent(folder / "concurrent", args.rounds)
        functions, parent_crashes, tune_hangs = user_code(folder / "tune" / "store")
        read_commands, modified = reads(folder / "kills", folder / "reads")
        time.sleep(2.0)  # what a command killed on its way out is gone by now
        left = left_running()
    rows = [
        ("inputs fuzzed", inputs, f"tests/fuzz exit code {fuzz_code}"),
        ("faults injected", injected, "statuses as expected" if not wrong else "; ".join(wrong)),
        ("kills survived", survived, f"of {args.kills} (seed {args.seed}); store check {_clean(clean)}"),
        ("concurrent rounds survived", raced,
         f"of {args.rounds}, {WRITERS} writers each on a new store; store checks {_clean(race_clean)}"),
        ("records lost", fault_lost + kill_lost + race_lost, "goal 0"),
        ("duplicates", duplicates, "goal 0"),
        ("tracebacks shown to the user", fuzz_tracebacks + fault_tracebacks, "goal 0"),
        ("hangs", hangs + tune_hangs, "goal 0 (fuzz tests, tune on dying user code)"),
        ("parent crashes", parent_crashes, f"goal 0 (tune on {functions} model functions that die)"),
        ("processes left", len(left), "goal 0" + (f": {'; '.join(left[:3])}" if left else "")),
        ("store modified by a read", modified, f"goal 0 ({read_commands} reading commands, 2 stores)"),
    ]  # fmt: skip
    print(f"{'reliability':<30} {'count':>6}  note")
    for name, value, note in rows:
        print(f"{name:<30} {value:>6}  {note}")
    for kind, count in sorted(per_class(folder_log).items()):
        print(f"{'  fuzzed: ' + kind:<30} {count:>6}")


if __name__ == "__main__":
    main()
