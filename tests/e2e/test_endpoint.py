"""Served LLMs end to end (issue 31): ``transformers serve`` with continuous batching started once
(module fixture, the tiny Llama), accelbench's ``llm@url`` curve against it, ``llm@transformers``
started by accelbench itself, and an unreachable endpoint as a cell status. Tiny sizes: 4 requests per
point, 8 tokens per reply."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from accelbench.endpoint.records import RequestRecord
from accelbench.endpoint.repeat import repeat_pairs
from accelbench.endpoint.servers import ServerSettings, TransformersCbServer
from accelbench.generation.models import LlmModel, load_model, missing_packages
from accelbench.serving.process import free_port
from tests.e2e.cli import accelbench, run_document

REASON = TransformersCbServer().unavailable_reason() or (missing_packages() and "llm extra missing")
pytestmark = pytest.mark.skipif(bool(REASON), reason=str(REASON))
SIZES = ("--concurrency", "1,4", "--endpoint-requests", "4", "--output-tokens", "8", "--no-probe")


@dataclass(frozen=True)
class Served:
    store: Path
    url: str
    model: LlmModel


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """transformers serve (CB) on the tiny Llama built in the store's cache, where the cells find it."""
    store = tmp_path_factory.mktemp("store")
    model = load_model("tiny-llama", store / "cache")
    server = TransformersCbServer()
    url, model_id = server.start(model.folder, store / "server", ServerSettings(4, 8, 1))
    assert model_id == "tiny-llama"
    try:
        yield Served(store, url, model)
    finally:
        server.stop()
    assert server._process.leftovers == []


@pytest.fixture(scope="module")
def url_run(served: Served) -> tuple[dict[str, Any], list[RequestRecord]]:
    """``accelbench run --stacks llm@url --serve-url URL --arrivals poisson`` at the server (the curve,
    then the max-QPS search): the result and its records."""
    args = ("--workloads", "tiny-llama", "--stacks", "llm@url", "--serve-url", served.url, *SIZES)
    args += ("--arrivals", "poisson")
    (result,) = run_document(served.store, *args)["results"]
    run_dir = served.store / "runs" / result["run_id"]
    lines = (run_dir / result["generation"]["requests_file"]).read_text().splitlines()
    return result, [RequestRecord.from_dict(json.loads(line)) for line in lines]


def measured(result: dict[str, Any]) -> None:
    """The cell measured its curve: ``ok``, or ``unstable`` when the noise guard saw this busy machine
    (its evidence stored with it: the status of an honest cell on a shared machine is not the test's)."""
    assert result["status"] in ("ok", "unstable"), result["reason"]
    noise = result["noise"]
    assert noise is not None and noise["unstable"] == (result["status"] == "unstable")
    assert result["reason"] == noise["reason"]


def test_the_curve_has_a_point_per_concurrency_with_every_figure(url_run: tuple[dict[str, Any], Any]) -> None:
    result, _ = url_run
    measured(result)
    curve = result["generation"]["curve"]
    # the second point holds the repeat audit's 4 pairs beside its 4 requests (endpoint.repeat)
    assert [p["concurrency"] for p in curve] == [1, 4] and [p["requests"] for p in curve] == [4, 12]
    for point in curve:
        assert point["error_rate"] == 0 and point["output_tokens_per_s"] > 0
        assert 0 < point["ttft_p50_s"] <= point["ttft_p99_s"] <= point["e2e_p99_s"]
        assert point["tokens_per_s_per_user"] == pytest.approx(1 / point["tpot_p90_s"])
        # the server listens on this machine: each point's window is metered (estimated here, no RAPL)
        assert point["energy_provenance"] in ("estimated", "measured") and point["energy_j"] > 0
        assert point["input_tokens"] >= point["requests"] * 8  # a chat template of a 32-token text at least
        assert point["energy_j"] / point["duration_s"] < 1000  # watts: a 2-vCPU share of a socket
    note = result["generation"]["energy_note"]
    assert note.startswith(("cpu-estimate: the run's process tree", "rapl")), note
    assert result["generation"]["prefix_cache"] == "undeclared (a server accelbench did not start)"
    accuracy = result["generation"]["accuracy"]
    # 16 drawn across the curve's and the search's replies (concurrency 0), up to 4 flagged ones beside
    assert accuracy["passed"] and set(accuracy["concurrencies"]) <= {0, 1, 4}
    assert 16 <= len(accuracy["shares"]) <= 20 and accuracy["mean_share"] >= 0.6
    names = ("salts", "first_chunk", "token_count", "repeat", "padding")
    assert [result["audit"][name]["verdict"] for name in names] == ["pass"] * 5
    assert "api_key" not in json.dumps(result["settings"]).replace("api_key_env", "")


def test_every_request_is_recorded_and_counted_with_the_tokenizer(
    url_run: tuple[dict[str, Any], Any], served: Served
) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(served.model.folder)
    _, every = url_run
    # the search's (test_poisson_arrivals_...) and the first point's second run, when the noise guard
    # asked for one (accelbench.endpoint.confirm) are left out
    records = [r for r in every if r.role not in ("poisson", "confirm")]
    assert [r.role for r in records].count("timed") == 16 and all(r.ok for r in records)
    # the repeat audit's pairs, inside the second point: the first point's 4 texts seen again, 4 never
    # seen, each pair at adjacent positions in an order drawn per pair
    assert not any(r.repeat for r in records if r.concurrency == 1)
    pairs = repeat_pairs(records)
    assert len(pairs) == 4 and all(a.concurrency == b.concurrency == 4 for a, b in pairs)
    assert len({r.salt for r in records}) == 16 and all(len(r.salt) == 32 for r in records)
    # tiny-llama's replies are random ids: decoded and tokenized again, one reply of 8 came back as 11
    # (make test, 2026-12-04), so the server's count and the client's agree on the total, not per reply
    usage = sum(r.usage_output_tokens or 0 for r in records)
    assert abs(usage - sum(r.output_tokens for r in records)) <= 0.2 * usage
    for record in records:
        assert record.output_tokens == len(tokenizer(record.text, add_special_tokens=False)["input_ids"])
        # a remote server gets no generation_config: EOS may end a reply before max_tokens
        assert record.finish_reason in ("stop", "length") and record.usage_output_tokens is not None
        assert 0 < record.usage_output_tokens <= 8
        if not record.text.strip():  # random ids can decode to nothing visible (make test, 2026-12-04)
            assert record.output_tokens == 0 or record.first_content_s is None
            continue
        assert record.output_tokens > 0
        assert record.send_s <= record.first_content_s <= record.end_s  # type: ignore[operator]
        assert record.chunk_s and record.chunk_s[-1] <= record.end_s


def test_export_writes_every_request_record_of_the_run(
    url_run: tuple[dict[str, Any], list[RequestRecord]], served: Served, tmp_path: Path
) -> None:
    result, records = url_run
    out = tmp_path / "requests.jsonl"
    done = accelbench("export", result["run_id"], "--format", "requests", "-o", str(out),
                      "--store", str(served.store))  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [RequestRecord.from_dict(line) for line in lines] == records
    searched = sum(p["requests"] for p in result["generation"]["qps_search"]["probes"])
    assert len(lines) == 16 + searched + sum(r.role == "confirm" for r in records)
    assert {(line["run_id"], line["cell_key"]) for line in lines} == {(result["run_id"], _key(result))}


def _key(result: dict[str, Any]) -> str:
    cell = result["cell"]
    return "/".join(str(cell[p]) for p in ("workload", "size", "variant", "stack", "device", "scenario"))


def test_llm_at_transformers_starts_and_stops_its_server(served: Served) -> None:
    args = ("--workloads", "tiny-llama", "--stacks", "llm@transformers", *SIZES)
    document = run_document(served.store, *args, "--endpoint-api", "completions")  # url_run: chat
    (result,) = document["results"]
    measured(result)
    assert result["generation"]["api"] == "completions"
    curve = result["generation"]["curve"]
    assert [p["concurrency"] for p in curve] == [1, 4]
    assert all(p["energy_j"] > 0 and p["energy_provenance"] for p in curve)  # its server runs here
    (per_chip,) = document["served_llm_per_chip"]  # ... on this machine's chips
    assert per_chip["cell_key"].split("/")[3] == "llm@transformers" and 0 < per_chip["chips"] <= 64, per_chip
    tokens = [p["output_tokens_per_s"] / per_chip["chips"] for p in curve]
    assert [p["output_tokens_per_s_per_chip"] for p in per_chip["points"]] == pytest.approx(tokens)
    log = served.store / "runs" / result["run_id"]
    assert list(log.rglob("transformers.log"))


def test_poisson_arrivals_search_the_max_qps_under_the_bounds(
    url_run: tuple[dict[str, Any], list[RequestRecord]],
) -> None:
    """``--arrivals poisson``: after the curve, probes of Poisson arrivals from the curve's request rate,
    each judged on p99 TTFT / TPOT; the max QPS is a passing probe's, and every request is recorded."""
    result, records = url_run
    measured(result)
    assert result["settings"]["arrivals"] == "poisson"
    search = result["generation"]["qps_search"]
    probes = search["probes"]
    start = result["generation"]["curve"][0]["requests_per_s"]
    assert 1 <= len(probes) <= search["budget"] == 6 and probes[0]["target_qps"] == pytest.approx(start)
    section = result["generation"]
    bounds = (section["goodput_ttft_bound_s"], section["goodput_tpot_bound_s"])
    assert (search["ttft_bound_s"], search["tpot_bound_s"]) == bounds
    passed = [p for p in probes if p["passed"]]
    assert search["max_qps"] == max(p["target_qps"] for p in passed) > 0, probes
    assert search["goodput_requests_per_s"] > 0
    # a failing probe brackets the max QPS, or the budget ran out while every probe passed
    assert any(not p["passed"] for p in probes) or search["ended"] == "budget of 6 probes spent"
    for probe in probes:
        assert probe["requests"] >= 16 and probe["requests_per_s"] > 0
        assert 0 < probe["ttft_p50_s"] <= probe["ttft_p90_s"] <= probe["ttft_p99_s"]
        assert probe["passed"] == (probe["reason"] == "")
    searched = [r for r in records if r.role == "poisson"]
    assert len(searched) == sum(p["requests"] for p in probes) and all(r.target_qps for r in searched)
    assert len({r.salt for r in records}) == len(records)  # fresh salts, as the curve's
    assert all(r.send_s >= r.issue_s for r in searched)  # issue: the scheduled arrival
    assert result["audit"]["salts"]["verdict"] == "pass"


@pytest.mark.exhaustive  # 62 s at load 4.7; make test: the unit tests judge planted probes, and every
# endpoint run here stores the guard's record (measured)
def test_a_busy_client_machine_makes_the_curve_unstable(served: Served) -> None:
    """A process outside the run keeps a core busy through the ladder: the guard marks the curve unstable
    (the served model's own server, at --serve-url on this machine, is the run's: not other load)."""
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        args = ("--workloads", "tiny-llama", "--stacks", "llm@url", "--serve-url", served.url)
        # one point: no repeat pairs (a one-point curve repeats nothing: endpoint.repeat)
        tiny = ("--concurrency", "1", "--endpoint-requests", "4", "--output-tokens", "8", "--no-probe")
        (result,) = run_document(served.store, *args, *tiny)["results"]
    finally:
        burner.kill()
        burner.wait()
    assert result["status"] == "unstable", result["reason"]
    assert result["reason"].startswith("unstable: other processes kept")
    assert result["noise"]["unstable"] and result["noise"]["other_load_cores"] >= 0.5
    assert [p["concurrency"] for p in result["generation"]["curve"]] == [1]


@pytest.mark.exhaustive  # 25-50 s; the client's unit tests cover the unreachable server's status
def test_an_unreachable_endpoint_is_an_unavailable_cell_in_one_line(served: Served) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    done = accelbench("run", "--workloads", "tiny-llama", "--stacks", "llm@url", "--serve-url", url, *SIZES,
                      "--json", "--store", str(served.store))  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (result,) = json.loads(done.stdout)["results"]
    assert result["status"] == "unavailable"
    assert result["reason"].startswith(f"{url}/v1/chat/completions: ClientConnectorError")
    assert "\n" not in result["reason"] and "Traceback" not in done.stderr


@pytest.mark.parametrize(("mode", "outcome"), [("ok", "pass"), ("cache", "fail")])
def test_the_repeat_audit_catches_a_cache_that_strips_the_salt(
    served: Served, mode: str, outcome: str
) -> None:
    """Seen texts re-salted against never-seen ones inside the second point, at its load, on the stdlib
    stub (0.2 s per prompt it has not seen with the salt's hex digits stripped; at once for one it has),
    with the model's own tokenizer and chat template."""
    from transformers import AutoTokenizer

    from accelbench.endpoint.cell import ladder
    from accelbench.endpoint.client import Target
    from accelbench.endpoint.figures import Bounds
    from accelbench.endpoint.repeat import repeat_verdict
    from accelbench.endpoint.settings import EndpointSettings
    from tests.unit.endpoint_stub import stub

    tokenizer = AutoTokenizer.from_pretrained(served.model.folder)
    settings = EndpointSettings(ladder=(1, 2), requests=6, max_tokens=6)
    unbounded = Bounds(math.inf, math.inf)
    with stub(mode) as url:
        climbed = ladder(Target(url, "tiny-llama"), tokenizer, 7, settings, (8, 48), len, unbounded)
    records = climbed.records
    assert [p.requests for p in climbed.curve] == [6, 18] and len({r.salt for r in records}) == 24
    pairs = repeat_pairs(records)
    assert len(pairs) == 6 and all(a.concurrency == 2 and a.repeat == "seen" for a, _ in pairs)
    verdict = repeat_verdict(records)
    assert verdict.outcome == outcome, verdict.reason


def test_verify_derives_the_curve_from_its_records_and_catches_a_raised_point(
    url_run: tuple[dict[str, Any], list[RequestRecord]], served: Served, tmp_path: Path
) -> None:
    from accelbench.bundle.archive import read_archive, write_archive

    result, _ = url_run
    bundle = tmp_path / "served.tar.gz"
    done = accelbench("bundle", result["run_id"], "-o", str(bundle), "--store", str(served.store))
    assert done.returncode == 0, done.stderr[-2000:]
    done = accelbench("verify", str(bundle))
    assert done.returncode == 0 and "; VERIFIED" in done.stdout, done.stdout  # the served repeat rule too
    (curve,) = [line for line in done.stdout.splitlines() if " curve: " in line]
    # 4 + 12 records: the repeat pairs are timed requests of the second point, counted in its figures
    assert curve.startswith("match") and "2 point(s) derived from 16 request record(s)" in curve, done.stdout

    files = dict(read_archive(bundle).files)
    files.pop("MANIFEST")
    (path,) = [p for p in files if p.startswith("results/")]
    doc = json.loads(files[path])
    doc["generation"]["curve"][1]["output_tokens_per_s"] *= 2
    files[path] = json.dumps(doc).encode()
    write_archive(tmp_path / "raised.tar.gz", files)
    done = accelbench("verify", str(tmp_path / "raised.tar.gz"))
    assert done.returncode == 1
    (curve,) = [line for line in done.stdout.splitlines() if " curve: " in line]
    assert curve.startswith("DIFFERS") and "concurrency 4: output_tokens_per_s " in curve
