"""A new endpoint server kind (``llm@<kind>``) takes the places the architecture's count says: checked by
adding one, ``example-echo`` (``tests.unit.example_endpoint_server``: its ``EndpointServer`` and its endpoint
stack; the app it starts, ``example_endpoint_server_app``; the test adds its rows to ``SERVERS`` and to
``registry.ENDPOINT_STACKS``). The harness's own code finds it by name (``--serve``, the stack's facts, its
declared cache), plans a cell on it for the endpoint driver, and, as it does around an endpoint cell
(``endpoint.cell.serving``, in this process: a cell's child would not see the fixture's rows), starts it with
the settings the run's knobs make, streams one request to it through the endpoint client and stops it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from accelbench import registry, runner
from accelbench.cell import pipeline
from accelbench.cli.serving import with_served
from accelbench.config import RunConfig
from accelbench.endpoint import cell, servers
from accelbench.endpoint.client import Prompt
from accelbench.endpoint.driver import Load, run_point
from accelbench.endpoint.facts import facts_of
from accelbench.endpoint.servers import ServerSettings
from accelbench.endpoint.settings import EndpointSettings
from accelbench.generation.models import LlmModel
from accelbench.serving.process import port_in_use
from accelbench.settings import expect
from accelbench.sut.endpoint_host import describe_stack
from tests.unit import example_endpoint_server
from tests.unit.example_endpoint_server import KIND, ExampleEchoServer

STACK = f"llm@{KIND}"
RUN_ID = "20261207-050000-abcd"


@pytest.fixture
def with_example_echo(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kind's two rows, as a developer adds them: the server by name, the endpoint stack naming it."""
    module = example_endpoint_server.__name__
    monkeypatch.setitem(servers.SERVERS, KIND, f"{module}:ExampleEchoServer")
    monkeypatch.setitem(registry.ENDPOINT_STACKS, STACK, f"{module}:ExampleEchoEndpoint")


def _config() -> RunConfig:
    chosen = {"workloads": ("tiny-llama",), "stacks": (STACK,), "scenarios": ("server",)}
    knobs = {"concurrency": (1, 3), "output_tokens": 8}  # --concurrency 1,3 --output-tokens 8
    return RunConfig.from_dict({"suite": "tiny", **chosen, "size": "tiny", "rules": "quick", **knobs})


def test_it_is_found_by_its_name(with_example_echo: None) -> None:
    assert with_served(("torch-eager",), (KIND,), llm=True) == ("torch-eager", STACK)  # --serve example-echo
    assert isinstance(servers.get_server(KIND), ExampleEchoServer)
    assert servers.prefix_cache(KIND) == ExampleEchoServer.prefix_cache
    facts = facts_of(describe_stack(lambda: registry.named("endpoint stack", STACK), "cpu"))
    assert (facts.name, facts.server, facts.unavailable_reason) == (STACK, KIND, None)
    assert facts.versions["python"]
    (planned,) = runner.plan(_config())
    assert registry.driver_name(planned.driver_ref) == "endpoint"


def test_its_command_line_carries_the_settings() -> None:
    argv = example_endpoint_server.command(Path("/models/tiny-llama"), 8123, ServerSettings(3, 8, 1))
    assert argv[1:3] == ["-m", "tests.unit.example_endpoint_server_app"]
    options = dict(zip(argv[3::2], argv[4::2], strict=True))
    owner = options.pop("--owner")
    assert options == {
        "--model": "tiny-llama",
        "--port": "8123",
        "--max-concurrency": "3",
        "--max-tokens": "8",
        "--threads": "1",
    }
    assert owner == str(os.getpid())  # the app stops itself when the cell process is gone


def test_the_cell_starts_it_streams_a_reply_and_stops_it(with_example_echo: None, tmp_path: Path) -> None:
    """``endpoint.cell.serving`` as the driver runs it: the kind by the stack's facts, started with the most
    requests in flight (the ladder's top), the reply length (``--output-tokens``) and half the cell's
    threads, its ``extra_body`` in the target, stopped with its port freed. The model's folder is not
    built: the stand-in reads only its name."""
    config = _config()
    (planned,) = runner.plan(config)
    spec = pipeline.cell_spec(RUN_ID, config, planned, tmp_path / "runs" / RUN_ID)
    settings = expect(spec.settings, EndpointSettings)
    facts = facts_of(describe_stack(lambda: registry.instantiate(spec.refs.stack), spec.cell.device))
    folder = tmp_path / "llm" / "tiny-llama"
    model = LlmModel("tiny-llama", folder, eos_token_id=0, vocab_size=1, params=1, description="", build_s=0)
    prompt = Prompt("9f3c2a7b", ({"role": "user", "content": "alpha beta gamma 9f3c2a7b"},), "")
    with cell.serving(facts, spec, model, settings) as target:
        (record,) = run_point(target, [prompt], Load(1, settings.max_tokens), lambda text: len(text.split()))
        port = int(target.url.rsplit(":", 1)[1])
        assert port_in_use(port)
    assert (target.model, dict(target.extra_body)) == ("tiny-llama", {"ignore_eos": True})
    assert record.ok and record.finish_reason == "length", record
    assert record.output_tokens == record.usage_output_tokens == 8  # ignore_eos reached the server
    assert record.text.split()[:4] == ["alpha", "beta", "gamma", "9f3c2a7b"]
    assert record.first_content_s is not None and len(record.chunk_s) == 8
    assert not port_in_use(port)  # stopped with its cell
    (log,) = Path(spec.folders.cell_dir).glob(f"{KIND}.log")
    ready = log.read_text().split("example-echo ready: ", 1)[1].splitlines()[0]
    threads = cell.server_threads(spec.threads)
    assert json.loads(ready) == {
        "model": "tiny-llama",
        "max_concurrency": 3,
        "max_tokens": 8,
        "threads": threads,
    }
