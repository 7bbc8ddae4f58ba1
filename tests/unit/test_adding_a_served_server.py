"""A new served inference server (``<stack>@<server>``) takes the places the architecture's count says:
checked by adding one, ``onnxruntime@stdlib-http`` (``tests.unit.example_server``: the stack module, the
app it starts; the test adds its row to ``registry.STACKS``). The harness's own code exports the model,
starts the server in the stack's process, sends LoadGen's queries over HTTP, checks the replies' quality,
and stops the server."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelbench import registry, runner
from accelbench.cli.serving import with_served
from accelbench.config import RunConfig
from accelbench.hardware.detect import detect_machine
from accelbench.serving.process import port_in_use
from accelbench.store import open_store
from tests.unit import example_server

NAME = "onnxruntime@stdlib-http"


@pytest.fixture
def with_stdlib_http(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's one row in ``registry.STACKS``, as a developer adds it."""
    monkeypatch.setitem(registry.STACKS, NAME, f"{example_server.__name__}:StdlibHttp")


def test_serve_finds_the_new_server_by_its_name(with_stdlib_http: None) -> None:
    assert NAME in with_served(("onnxruntime",), ("stdlib-http",))


def test_a_cell_on_it_is_measured_through_the_server_and_the_server_is_stopped(
    with_stdlib_http: None, tmp_path: Path
) -> None:
    """About the server's way through the harness, not the machine's quiet: the status may be ``unstable``
    or ``unverified`` on a loaded machine (the timing audits), never a failure of the cell."""
    here = detect_machine(probe_gpus=False)
    config = RunConfig("tiny", ("resnet50",), (NAME,), ("single-stream",), "tiny", "quick")
    with open_store(tmp_path / "store") as store:
        run_id = runner.start_run(store, config, here)
        runner.execute(store, run_id, config, here)
        (result,) = store.results(run_id)
    assert result.cell.stack == NAME
    assert result.head.status in ("ok", "unstable", "unverified"), (result.head.status, result.head.reason)
    assert result.head.quality is not None and result.head.quality.passed, result.head.quality
    details = result.head.settings["stack"]
    assert (
        details["server"] == "stdlib-http" and details["server_stats"] == example_server.STATS["server_stats"]
    )
    assert details["onnx_files"].startswith("resnet50-tiny-canonical-")
    assert result.latency is not None and result.latency.samples > 0
    port = int(details["url"].rsplit(":", 1)[1])
    assert not port_in_use(port)  # stopped with its cell
    logs = list((tmp_path / "store").rglob("stdlib-http-*.log"))
    assert logs and all("accelbench: stdlib-http ready" in log.read_text() for log in logs)
