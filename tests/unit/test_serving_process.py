"""Server lifecycle (``accelbench.serving.process``) with a fake server: a stdlib HTTP server that
spawns a helper in a process group of its own (as Ray's workers are), so only a kill by session
finds it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from accelbench.serving import metrics, process

FAKE_SERVER = """
import http.server, os, signal, subprocess, sys
port, mode = int(sys.argv[1]), sys.argv[2]
if mode == "exit":
    print("fake: cannot load the model", flush=True)
    sys.exit(3)
helper = subprocess.Popen([sys.executable, "-c", "import os, time; os.setpgid(0, 0); time.sleep(600)"])
if mode == "never":
    import time
    time.sleep(600)
if mode == "owner":
    sys.path.insert(0, sys.argv[4])
    from accelbench.serving.sessions import watch_owner
    watch_owner(int(sys.argv[3]), lambda: None, remove=[sys.argv[5]])
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
class Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"ready")
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Ok).serve_forever()
"""


def _start(tmp_path: Path, mode: str = "serve", *extra: str, timeout_s: float = 30) -> process.ServerProcess:
    script = tmp_path / "fake_server.py"
    script.write_text(FAKE_SERVER)
    port = process.free_port()
    return process.start(
        "fake", [sys.executable, str(script), str(port), mode, *extra], (port,), tmp_path / "fake.log",
        lambda: metrics.http_ok(f"http://127.0.0.1:{port}/ready"), timeout_s,
    )  # fmt: skip


def _gone(server: process.ServerProcess) -> None:
    assert process.session_pids(server.sid) == []
    assert not any(process.port_in_use(port) for port in server.ports)


def test_start_waits_until_ready_and_stop_leaves_nothing(tmp_path: Path) -> None:
    server = _start(tmp_path)
    assert len(process.session_pids(server.sid)) == 2  # the server and its helper in another group
    assert process.port_in_use(server.ports[0])
    assert process.stop(server, grace_s=5) == []
    _gone(server)
    assert process.stop(server) == []  # twice is harmless


def test_a_taken_port_is_a_one_line_error_and_nothing_starts(tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        with pytest.raises(process.ServerError, match=rf"^fake: port {port} on 127.0.0.1 is already in use$"):
            process.start("fake", [sys.executable, "-c", "raise SystemExit(9)"], (port,), tmp_path / "x.log",
                          lambda: True, 5)  # fmt: skip
    assert not (tmp_path / "x.log").exists()


def test_a_server_that_exits_at_start_says_why(tmp_path: Path) -> None:
    with pytest.raises(process.ServerError, match="exited with code 3 at start: fake: cannot load the model"):
        _start(tmp_path, "exit")


def test_a_server_never_ready_is_stopped_after_the_timeout(tmp_path: Path) -> None:
    before = pids_running((b"fake_server.py",))
    started = time.monotonic()
    with pytest.raises(process.ServerError, match="not ready after 2 s"):
        _start(tmp_path, "never", timeout_s=2)
    assert time.monotonic() - started < 20
    assert pids_running((b"fake_server.py",)) <= before


def test_a_killed_launcher_leaves_no_helper_behind(tmp_path: Path) -> None:
    server = _start(tmp_path)
    os.kill(server.popen.pid, signal.SIGKILL)  # the server crashes; its helper lives on
    server.popen.wait(5)
    assert len(process.session_pids(server.sid)) == 1
    assert process.stop(server, grace_s=1) == []
    _gone(server)


def test_the_server_stops_itself_when_its_owner_dies(tmp_path: Path) -> None:
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    repo = str(Path(process.__file__).parents[2])
    temp = tmp_path / "server-temp"
    temp.mkdir()
    server = _start(tmp_path, "owner", str(owner.pid), repo, str(temp))
    owner.kill()
    owner.wait(5)
    deadline = time.monotonic() + 20
    while process.session_pids(server.sid) and time.monotonic() < deadline:
        time.sleep(0.2)
    _gone(server)
    assert not temp.exists()  # the server's temp folder goes with it
    process.stop(server, grace_s=1)


def test_port_in_use_ignores_time_wait_but_not_listeners() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert process.port_in_use(port)
    assert not process.port_in_use(port)


def pids_running(markers: tuple[bytes, ...]) -> set[int]:
    """Processes whose command line holds one of ``markers``."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                command = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if any(marker in command for marker in markers):
                found.add(int(entry))
    return found


def test_a_server_that_cannot_bind_starts_again_on_other_ports(tmp_path: Path) -> None:
    """The port was free when chosen and taken before the server bound it (Ray's daemons pick theirs at
    random as they start): ``on_free_ports`` starts it again on fresh ports; other failures at once."""
    script = tmp_path / "fake_server.py"
    script.write_text(FAKE_SERVER)
    tried: list[int] = []
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]

        def start(mode: str = "serve") -> process.ServerProcess:
            port = taken if not tried else process.free_port()  # the first start binds the squatted port
            tried.append(port)
            checked = process.free_port()  # what the harness checked (free) is not what the server binds
            argv = [sys.executable, str(script), str(port), mode]
            ready = lambda: metrics.http_ok(f"http://127.0.0.1:{port}/ready")  # noqa: E731
            return process.start("fake", argv, (checked,), tmp_path / "fake.log", ready, 30)

        server = process.on_free_ports(start)
        assert tried[0] == taken and len(tried) == 2 and tried[1] != taken
        assert metrics.http_ok(f"http://127.0.0.1:{tried[1]}/ready")
        assert process.stop(server, grace_s=5) == []
        tried.clear()
        tried.append(0)  # from here on fresh ports: the failure is the model's, tried once
        with pytest.raises(process.ServerError, match="exited with code 3 at start"):
            process.on_free_ports(lambda: start("exit"))
        assert len(tried) == 2
