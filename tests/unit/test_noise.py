"""The noise guard: the run's own process tree, other load and steal, the samples' shift, the verdict,
the run's noise floor. Fake ``/proc`` trees and fixed numbers; the one real process test asserts on CPU
time a child spent, which does not depend on how busy the machine is."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from accelbench.head import NoiseProbe
from accelbench.meters import cputime, noise, reference_probe
from accelbench.meters.cputime import CpuClock, ProcessTimes
from accelbench.stored import from_dict, to_dict


def _stat_line(pid: int, ppid: int, session: int, utime: int, cutime: int = 0, name: str = "py") -> str:
    # pid (comm) state ppid pgrp session tty tpgid flags 4 fault counts, utime stime cutime cstime ...
    return f"{pid} ({name}) S {ppid} {pid} {session} 0 -1 0 0 0 0 0 {utime} 1 {cutime} 1 20 0 1 0\n"


def _fake_proc(root: Path, lines: dict[int, str], stat: str = "cpu  100 0 50 800 10 5 5 40 0 0\n") -> Path:
    for pid, line in lines.items():
        (root / str(pid)).mkdir(parents=True)
        (root / str(pid) / "stat").write_text(line)
    (root / "stat").write_text(stat)
    (root / "self").mkdir()  # not a pid: skipped
    return root


def test_parse_stat_reads_a_name_with_spaces_and_parentheses() -> None:
    parsed = cputime.parse_stat(_stat_line(42, 7, 9, utime=30, cutime=5, name="a (b) c"))
    # utime 30 + stime 1 + cutime 5 + cstime 1
    assert parsed == ProcessTimes(pid=42, ppid=7, session=9, ticks=37)
    assert cputime.parse_stat("garbage") is None


def test_the_tree_holds_descendants_and_orphans_of_a_session_it_leads_but_nothing_else() -> None:
    table = [
        ProcessTimes(10, 1, 5, 0),  # the runner, in the user's login session 5
        ProcessTimes(11, 10, 5, 0),  # forkserver
        ProcessTimes(12, 11, 12, 0),  # the cell: setsid, leads session 12
        ProcessTimes(13, 12, 12, 0),  # a trial process
        ProcessTimes(14, 1, 12, 0),  # a server orphaned by its trial, re-parented to init
        ProcessTimes(5, 1, 5, 0),  # the login shell: the runner's parent, not the run's
        ProcessTimes(20, 5, 5, 0),  # another job of the same shell: not the run's
        ProcessTimes(30, 1, 30, 0),  # an unrelated daemon
    ]
    assert cputime.tree_members(table, 10) == {10, 11, 12, 13, 14}
    assert cputime.tree_members(table, 12) == {12, 13, 14}


def test_own_cpu_counts_the_tree_with_reaped_children_in_clock_ticks(tmp_path: Path) -> None:
    proc = _fake_proc(
        tmp_path,
        {
            100: _stat_line(100, 1, 100, utime=50, cutime=200),  # reaped trial: 200 ticks in cutime
            101: _stat_line(101, 100, 100, utime=300),
            102: _stat_line(102, 1, 102, utime=9000),  # someone else
        },
    )
    tick = os.sysconf("SC_CLK_TCK")
    own = cputime.own_cpu_s(str(proc), root_pid=100)
    assert own == pytest.approx((50 + 1 + 200 + 1 + 300 + 1 + 0 + 1) / tick)


def _tcp_line(port: int, state: str, inode: int) -> str:
    timers = "00000000:00000000 00:00000000 00000000"
    return f"   0: 0100007F:{port:04X} 00000000:0000 {state} {timers}  1000 0 {inode} 1\n"


def test_a_local_server_someone_else_started_counts_as_the_runs_and_nothing_else_does(tmp_path: Path) -> None:
    """``--serve-url`` on this machine: the server's whole tree (the app that started it, its raylet,
    the listening worker) is the run's; the shell and pytest above both are not."""
    proc = _fake_proc(
        tmp_path,
        {
            5: _stat_line(5, 1, 5, utime=0),  # the shell
            10: _stat_line(10, 5, 5, utime=0),  # pytest, which started the runner and the server
            20: _stat_line(20, 10, 5, utime=100),  # the runner: the run's root
            30: _stat_line(30, 10, 30, utime=10),  # the server app, by hand
            31: _stat_line(31, 30, 30, utime=20),  # its raylet
            32: _stat_line(32, 31, 30, utime=30),  # the listening worker
            40: _stat_line(40, 1, 40, utime=500),  # an unrelated daemon
        },
    )
    (proc / "net").mkdir()
    header = (
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    )
    (proc / "net" / "tcp").write_text(header + _tcp_line(8000, "0A", 777) + _tcp_line(8000, "01", 888))
    (proc / "32" / "fd").mkdir()
    os.symlink("socket:[777]", proc / "32" / "fd" / "5")
    (proc / "40" / "fd").mkdir()
    os.symlink("socket:[888]", proc / "40" / "fd" / "3")  # a connection to the port, not a listener
    roots = cputime.server_roots("http://127.0.0.1:8000", str(proc), root_pid=20)
    assert roots == {30}
    for other in ("http://10.1.2.3:8000", "http://127.0.0.1:8001", "http://127.0.0.1:port", None):
        assert cputime.server_roots(other, str(proc), root_pid=20) == frozenset()
    tick = os.sysconf("SC_CLK_TCK")
    own = cputime.own_cpu_s(str(proc), 20, roots)
    assert own == pytest.approx((100 + 10 + 20 + 30 + 4 * 2) / tick)  # stime and cstime 1 each


def test_machine_times_keep_steal_apart_from_busy(tmp_path: Path) -> None:
    proc = _fake_proc(tmp_path, {})
    busy_s, steal_s = cputime.machine_times_s(proc / "stat")
    tick = os.sysconf("SC_CLK_TCK")
    # user 100 + nice 0 + system 50; idle, iowait, irq, softirq out; steal 40 apart
    assert (busy_s, steal_s) == (pytest.approx(150 / tick), pytest.approx(40 / tick))
    assert cputime.machine_times_s(tmp_path / "missing") == (0.0, 0.0)


def test_other_load_and_steal_are_per_second_of_wall_time() -> None:
    start = CpuClock(machine_busy_s=100.0, own_s=10.0, wall_s=0.0, steal_s=1.0)
    end = CpuClock(machine_busy_s=104.0, own_s=13.5, wall_s=2.0, steal_s=1.4)
    assert noise.other_load_cores(start, end) == pytest.approx(0.25)
    assert noise.steal_cores(start, end) == pytest.approx(0.2)
    assert noise.other_load_cores(start, CpuClock(100.0, 11.0, 2.0)) == 0.0  # never negative
    assert noise.other_load_cores(start, start) == 0.0


def _spin(cpu_s: float) -> None:
    stop = time.process_time() + cpu_s
    while time.process_time() < stop:
        pass


def test_a_spawned_child_busy_for_a_second_is_the_runs_own_time_not_other_load() -> None:
    """The retried cell's trial process was counted as another process's load (issue 34): its CPU
    time must show in the run's own time, live or reaped."""
    context = multiprocessing.get_context("spawn")
    before = cputime.own_cpu_s(root_pid=os.getpid())
    child = context.Process(target=_spin, args=(1.0,))
    child.start()
    child.join()
    after = cputime.own_cpu_s(root_pid=os.getpid())
    # the child spun 1.0 s of CPU (plus its interpreter start); the parent only waited
    assert after - before >= 0.95


def _spin_then_wait(cpu_s: float, spun: object, release: object) -> None:
    _spin(cpu_s)
    spun.set()  # type: ignore[attr-defined]
    release.wait(60)  # type: ignore[attr-defined]


def test_a_live_child_counts_as_the_runs_own_time_while_it_runs() -> None:
    context = multiprocessing.get_context("spawn")
    spun, release = context.Event(), context.Event()
    before = cputime.own_cpu_s(root_pid=os.getpid())
    child = context.Process(target=_spin_then_wait, args=(0.8, spun, release))
    child.start()
    try:
        assert spun.wait(120)
        live = cputime.own_cpu_s(root_pid=os.getpid())
    finally:
        release.set()
        child.join()
    assert live - before >= 0.75


def _root_seen(conn: object) -> None:
    conn.send(cputime.run_root_pid())  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("named", "parent_is_root"), [("parent", True), ("1", False), ("999999999", False), ("", False)]
)
def test_the_run_root_is_the_named_runner_only_when_it_is_an_ancestor(
    named: str, parent_is_root: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cputime.RUNNER_PID_VARIABLE, str(os.getpid()) if named == "parent" else named)
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_root_seen, args=(sender,))
    child.start()
    root = receiver.recv()
    child.join()
    assert root == (os.getpid() if parent_is_root else child.pid)


def test_samples_within_their_dispersion_have_not_shifted() -> None:
    rng = np.random.default_rng(1)
    samples = 0.010 * (1 + 0.1 * np.abs(rng.standard_normal(600)))
    shift = noise.samples_shift(samples)
    assert shift is not None and not shift.significant and abs(shift.relative) < 0.02


def test_samples_that_slow_by_ten_percent_half_way_have_shifted() -> None:
    rng = np.random.default_rng(2)
    samples = 0.010 * (1 + 0.05 * np.abs(rng.standard_normal(600)))
    samples[300:] *= 1.10
    shift = noise.samples_shift(samples)
    assert shift is not None and shift.significant and shift.relative == pytest.approx(0.10, abs=0.02)


def test_a_shift_inside_a_wide_dispersion_does_not_count_and_few_samples_are_not_judged() -> None:
    rng = np.random.default_rng(3)
    samples = 0.010 * np.exp(0.8 * rng.standard_normal(60))  # a spread far wider than 4%
    samples[30:] *= 1.04
    shift = noise.samples_shift(samples)
    assert shift is not None and not shift.significant
    assert noise.samples_shift([0.01] * (noise.SHIFT_MIN_SAMPLES - 1)) is None


SLOWER = noise.Shift(0.12, True)


@pytest.mark.parametrize(
    ("other", "steal", "drift", "shift", "slower", "words"),
    [
        (0.02, 0.0, 0.03, SLOWER, True, ""),  # quiet: nothing
        (0.4, 0.0, 0.0, None, True, "other processes kept 0.40 cores"),
        (0.0, 0.3, 0.0, None, True, "hypervisor stole 0.30 cores"),  # enough to move any figure
        (0.0, 0.15, 0.0, noise.Shift(0.001, False), True, ""),  # steal the figure does not show
        (0.0, 0.15, 0.0, None, True, ""),  # nor the probe
        (0.0, 0.15, 0.0, noise.Shift(-0.12, True), True, "stole 0.15 cores while it ran (limit 0.10) and"),
        (0.0, 0.15, 0.15, None, True, "stole 0.15 cores while it ran (limit 0.10) and the reference"),
        (0.0, 0.0, 0.15, None, True, "drifted 15%"),  # no samples to ask: the probe decides
        (0.0, 0.0, 0.15, SLOWER, True, "samples moved +12%"),
        (0.0, 0.0, 0.15, noise.Shift(0.001, False), True, ""),  # the samples did not move
        (0.0, 0.0, 0.15, SLOWER, False, ""),  # probe faster, samples slower: not one disturbance
    ],
)
def test_the_verdict_follows_the_evidence(
    other: float, steal: float, drift: float, shift: noise.Shift | None, slower: bool, words: str
) -> None:
    evidence = noise.Evidence(other, steal, drift, 0.10, shift, slower)
    reason = noise.disturbance(evidence)
    assert (reason == "") == (words == "") and words in reason
    outside = noise.outside_disturbance(evidence)  # what a timing audit's failure is weighed against
    assert outside == (reason if other >= 0.1 or "stole" in reason else "")


def test_the_outside_part_is_judged_again_from_a_stored_record_with_the_machines_limit() -> None:
    busy = _probe(other_load_cores=0.5, after_s=0.02, drift=1.0, unstable=True)
    assert noise.outside_reason(busy, 0.1).startswith("unstable: other processes kept 0.50 cores busy")
    assert noise.outside_reason(busy, 0.8) == ""  # a big machine's limit
    drifted = _probe(after_s=0.02, drift=1.0, unstable=True, reason="unstable: reference probe drifted")
    assert noise.outside_reason(drifted, 0.1) == "" and noise.outside_reason(None) == ""  # the stack's own


def test_the_other_load_limit_is_a_share_of_a_big_machine() -> None:
    assert noise.other_load_limit_cores(2) == noise.OTHER_LOAD_LIMIT_CORES == 0.1
    assert noise.other_load_limit_cores(16) == pytest.approx(0.8)
    evidence = noise.Evidence(0.5, 0.0, 0.0, 0.1, None, False, other_limit_cores=0.8)
    assert noise.disturbance(evidence) == ""


def _probe(**change: object) -> NoiseProbe:
    fields: dict = dict(
        before_s=0.01, after_s=0.01, drift=0.0, loadavg_before=0.1, loadavg_after=0.1,
        other_load_cores=0.0, unstable=False,
    )  # fmt: skip
    fields.update(change)
    return NoiseProbe(**fields)


def test_warnings_say_busy_only_for_others_and_a_shift_with_nothing_else_busy() -> None:
    assert noise.guard_warnings(_probe(other_load_cores=0.05, samples_shift=0.01)) == []
    assert noise.guard_warnings(_probe(other_load_cores=0.6))[0].startswith("machine busy: ")
    own_drift = noise.guard_warnings(_probe(samples_shift=-0.08, samples_shifted=True))
    assert len(own_drift) == 1 and "8% faster" in own_drift[0]


def test_a_disturbance_still_going_on_is_not_measured_again() -> None:
    assert not noise.worth_retrying(_probe(unstable=False, other_load_after_cores=0.0))
    assert noise.worth_retrying(_probe(unstable=True, other_load_after_cores=0.1))
    assert not noise.worth_retrying(_probe(unstable=True, other_load_after_cores=1.2))
    assert noise.worth_retrying(_probe(unstable=True))  # an older record: no closing reading


def test_an_older_record_without_the_new_fields_loads_and_says_why_it_was_unstable() -> None:
    golden = json.loads((Path(__file__).parent.parent / "golden" / "result_v6.json").read_text())
    old = {k: golden["noise"][k] for k in ("before_s", "after_s", "drift", "loadavg_before")}
    old.update(loadavg_after=0.5, other_load_cores=1.7, unstable=True, drift=0.07)
    result = from_dict({**golden, "noise": old})
    assert (
        result.head.noise is not None
        and result.head.noise.threshold == 0.05
        and result.head.noise.reason == ""
    )
    assert noise.unstable_reason(result.head.noise) == (
        "unstable: reference probe drifted 7% during the measurement (limit 5%)"
    )
    assert to_dict(result)["noise"]["steal_cores"] == 0.0


def test_the_drift_limit_is_four_floors_within_its_bounds() -> None:
    assert reference_probe.drift_limit(0.028) == pytest.approx(0.112)
    assert reference_probe.drift_limit(0.001) == reference_probe.DRIFT_MIN
    assert reference_probe.drift_limit(0.2) == reference_probe.DRIFT_MAX
    floor = reference_probe.floor_of([(1.0, 1.02), (1.0, 0.97), (2.0, 2.02)])
    assert floor.median_drift == pytest.approx(0.02) and floor.threshold == pytest.approx(0.08)


def _floor(drifts: tuple[float, ...]) -> reference_probe.NoiseFloor:
    return reference_probe.floor_of([(1.0, 1.0 + d) for d in drifts])


HONEST = (0.01, 0.02, 0.03, 0.01, 0.02, 0.04, 0.01, 0.03)


def test_a_run_reuses_a_floor_this_host_measured_minutes_ago_only_when_fresh_pairs_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    measured, calls = _floor(HONEST), []
    monkeypatch.setattr(reference_probe, "_taken", None)
    monkeypatch.setattr(reference_probe, "measure_floor", lambda: calls.append(1) or measured)
    fresh = iter([(1.0, 1.03)] * 3 + [(1.0, 1.001)] * 3)
    monkeypatch.setattr(reference_probe, "measure_pair", lambda: next(fresh))
    cache = tmp_path / "cache" / "noise-floor-h.json"
    assert reference_probe.host_floor(cache) == measured and calls == [1]
    assert reference_probe.cached_floor(cache) == measured
    monkeypatch.setattr(reference_probe, "_taken", None)
    assert reference_probe.host_floor(cache) == measured and calls == [1]  # fresh 3% >= its 2% median
    monkeypatch.setattr(reference_probe, "_taken", None)
    assert reference_probe.host_floor(cache) == measured and calls == [1, 1]  # fresh 0.1%: measured again
    # too old, from the future, a limit that does not follow from its own pairs: not reused
    stored = json.loads(cache.read_text())
    at = datetime.fromisoformat(measured.measured_at)
    later = at + timedelta(seconds=reference_probe.FLOOR_REUSE_S + 1)
    assert reference_probe.cached_floor(cache, now=later) is None
    assert reference_probe.cached_floor(cache, now=at - timedelta(seconds=5)) is None
    cache.write_text(json.dumps({**stored, "threshold": reference_probe.DRIFT_MAX}))
    assert reference_probe.cached_floor(cache) is None
    cache.write_text(json.dumps({**stored, "pair_drifts": stored["pair_drifts"][:2]}))
    assert reference_probe.cached_floor(cache) is None
    # a cache that cannot be written: the run measures and goes on
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setattr(reference_probe, "_taken", None)
    assert reference_probe.host_floor(blocked / "x.json") == measured and calls == [1, 1, 1]


def test_a_forged_cache_loosens_the_limit_at_most_to_the_fresh_pairs_largest_drift() -> None:
    forged = _floor((0.05,) * 8)  # a self-consistent floor: limit 20%, the most there is
    honest_fresh = [(1.0, 1.01), (1.0, 1.02), (1.0, 1.005)]
    assert reference_probe.checked_floor(forged, honest_fresh) is None
    assert reference_probe.checked_floor(_floor(HONEST), [(1.0, 1.03), *honest_fresh[1:]]) is not None
    assert reference_probe.checked_floor(None, honest_fresh) is None


def test_a_spec_floor_is_derived_again_from_its_pairs_and_clamped() -> None:
    honest = reference_probe.floor_to_dict(_floor(HONEST))
    assert reference_probe.floor_from_dict({**honest, "threshold": 10.0}).threshold == pytest.approx(0.08)
    wide = reference_probe.floor_from_dict({**honest, "pair_drifts": [0.9] * 8})
    assert wide.threshold == reference_probe.DRIFT_MAX
    for bad in ([], [float("nan")], [-0.5]):
        with pytest.raises(ValueError):
            reference_probe.floor_from_dict({**honest, "pair_drifts": bad})
    start = noise.begin(honest)
    assert start.floor.threshold == pytest.approx(0.08) and start.outside_view == ""


def test_a_remote_server_is_outside_the_guards_view_and_the_record_says_so() -> None:
    assert cputime.remote_server(None) == "" and cputime.remote_server("http://127.0.0.1:8000") == ""
    said = cputime.remote_server("http://gpu-box.example:8000/v1")
    assert "gpu-box.example" in said and "outside the noise guard's view" in said
    probe = _probe(outside_view=said)
    assert noise.guard_warnings(probe) == [said]


def _orphaned_spin(adopt: bool, conn: object) -> None:
    """In a process of its own: start a launcher in a session of its own that starts a spinner and
    exits at once (a server's daemons killed with their launcher), wait for the spinner, send the own
    time it added."""
    if adopt:
        assert cputime.adopt_orphans()
    before = cputime.own_cpu_s(root_pid=os.getpid())
    code = (
        "import subprocess, sys; print(subprocess.Popen([sys.executable, '-c', "
        "'import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.8: pass']).pid)"
    )
    launched = subprocess.run(
        [sys.executable, "-c", code], start_new_session=True, check=True, capture_output=True
    )
    stat = Path(f"/proc/{int(launched.stdout)}/stat")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and _alive(stat):
        time.sleep(0.1)  # until the spinner exited (a zombie of ours, or reaped by init)
    conn.send(cputime.own_cpu_s(root_pid=os.getpid()) - before)  # type: ignore[attr-defined]


def _alive(stat: Path) -> bool:
    try:
        return stat.read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("adopt", [True, False])
def test_an_orphan_the_run_started_stays_its_own_time_once_it_exited(adopt: bool) -> None:
    """Ray's workers and daemons outlive their launcher and were reaped by init: their whole CPU time
    read as other load (issue 45). Without ``adopt_orphans`` the planted orphan's time is lost."""
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_orphaned_spin, args=(adopt, send))
    child.start()
    added_s = receive.recv()
    child.join()
    assert (added_s >= 0.75) == adopt, added_s


def _auto_reaped_spin(conn: object) -> None:
    """In a process of its own that ignores SIGCHLD (as Ray's raylet does): a child spins 0.8 s of CPU
    and exits, reaped by the kernel into nobody's ``cutime``; send (own time with the watch's, without).
    The child rests 1.5 s (three of the watch's readings) before it exits: what the watch loses by
    design, a child's time after its last reading, is not what this asserts (a busy machine once
    stretched that gap to 0.3 s of the 0.8)."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    watch = cputime.AutoReapedWatch(os.getpid())
    before = cputime.own_cpu_s(root_pid=os.getpid())
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.8: pass\ntime.sleep(1.5)"
    pid = subprocess.Popen([sys.executable, "-c", spin]).pid
    deadline = time.monotonic() + 60
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)  # until the kernel reaped it
    gone_s = watch.close()
    tree_s = cputime.own_cpu_s(root_pid=os.getpid()) - before
    conn.send((tree_s + gone_s, tree_s))  # type: ignore[attr-defined]


def test_a_child_the_kernel_reaped_for_its_parent_stays_the_runs_own_time() -> None:
    """Ray's workers, reaped at exit by a raylet that ignores SIGCHLD, took their CPU time (the served
    model's inference) out of the tree's sum: a Ray Serve cell read it as 0.6 cores of other load."""
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_auto_reaped_spin, args=(send,))
    child.start()
    watched_s, tree_s = receive.recv()
    child.join()
    assert watched_s >= 0.7 and tree_s < 0.4, (watched_s, tree_s)


def _drifted(other_cores: float = 0.0) -> NoiseProbe:
    """A measurement unstable on an 8% probe drift (limit 5%) with no samples judged."""
    evidence = noise.Evidence(other_cores, 0.0, 0.08, 0.05, None, True)
    reason = noise.disturbance(evidence)
    return NoiseProbe(1e-3, 1.08e-3, 0.08, 0.5, 0.5, other_cores, True, threshold=0.05, reason=reason)


def test_a_drift_alone_is_settled_by_the_same_work_measured_again() -> None:
    rng = np.random.default_rng(4)
    first = list(0.02 * (1 + 0.05 * rng.standard_normal(60)))
    same = list(0.02 * (1 + 0.05 * rng.standard_normal(60)))
    slower = [s * 1.1 for s in same]
    drifted = _drifted()
    assert noise.drift_alone(drifted) and not noise.drift_alone(_drifted(other_cores=0.5))
    kept = noise.rejudged(drifted, noise.runs_shift(first, same))
    assert not kept.unstable and kept.reason == "" and kept.samples_shifted is False
    still = noise.rejudged(drifted, noise.runs_shift(first, slower))
    assert still.unstable and still.samples_shifted and still.reason.endswith("moved +11% with it")
    faster = noise.rejudged(drifted, noise.runs_shift(first, [s / 1.1 for s in same]))
    assert not faster.unstable  # the work sped up while the probe slowed: not the probe's drift
    assert noise.runs_shift(first, same[:5]) is None  # too few to judge: the probe alone decides
    assert noise.rejudged(drifted, None).unstable


def test_a_training_cell_keeps_a_drift_alone_as_a_warning_and_other_load_as_unstable() -> None:
    """No series to corroborate the probe (a few runs of different lengths): a drift alone is a warning;
    other load past its limit is ``unstable`` as for every cell."""
    kept, notes = noise.drift_as_warning(_drifted())
    assert not kept.unstable and kept.reason == "" and kept.drift == 0.08
    drifted = "reference probe drifted 8% during the measurement (limit 5%)"
    assert notes == [f"{drifted}, with no timed series to corroborate it (a warning)"]
    loaded = _drifted(other_cores=0.5)
    assert noise.drift_as_warning(loaded) == (loaded, []) and loaded.unstable


def test_a_cell_measured_twice_keeps_why_its_first_attempt_was_discarded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The null cell measured as the runner measures it (``inference.measure``), its first attempt's
    closing probe made unstable: the cell runs a second attempt (its own LoadGen folder), and the stored
    noise record and the result's warnings say why the first was discarded (measured once: neither)."""
    from accelbench import registry
    from accelbench.cell import inference, pipeline, trial
    from accelbench.cellspec import PlannedCell
    from accelbench.config import RunConfig
    from accelbench.results import Cell

    cell = Cell("resnet50", "null", "offline", "cpu", "tiny")
    config = RunConfig("tiny", ("resnet50",), ("null",), ("offline",), "tiny", "quick")
    refs = (registry.table("workload")["resnet50"], registry.table("stack")["null"])
    planned = PlannedCell(cell, *refs, registry.DRIVERS["loadgen"])
    real_end, ends = noise.end, []

    def first_unstable(*args: Any, **kwargs: Any) -> NoiseProbe:
        probe = real_end(*args, **kwargs)
        ends.append(probe)
        first = len(ends) == 1  # the first closing probe only: the second attempt is judged stable
        return dataclasses.replace(
            probe, unstable=first, reason="unstable: planted", other_load_after_cores=0.0
        )

    monkeypatch.setattr(noise, "end", first_unstable)
    monkeypatch.setattr(trial, "spawned", trial.run)  # the second attempt here too: no new interpreter
    floor = reference_probe.floor_of([(1e-3, 1.01e-3)] * reference_probe.FLOOR_PAIRS)  # the runner's part
    spec = pipeline.cell_spec("20261206-160000-abcd", config, planned, tmp_path, noise_floor=floor)
    outcome = inference.measure(spec)
    attempts = sorted(p.name for p in (Path(spec.folders.cell_dir) / "loadgen").iterdir())
    assert attempts == ["a0-t0", "a1-t0"] and len(ends) == 2
    assert outcome.head.noise is not None and outcome.head.noise.retried == "unstable: planted"
    assert [w for w in outcome.head.warnings if w.startswith("measured twice")] == [
        "measured twice: the first attempt was discarded (unstable: planted)"
    ]
    assert noise.retry_warnings(dataclasses.replace(outcome.head.noise, retried="")) == []
