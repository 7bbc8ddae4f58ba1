"""The planted dishonest OpenAI-compatible servers (tests/e2e/planted_endpoints.py).

First each mode against a tiny aiohttp fake upstream (fast, no model): what it changes and what it keeps.
Then (``exhaustive`` until issue 31's endpoint client is merged) ``accelbench run --serve-url`` through each
proxy in front of a real ``transformers serve``: the cheaters end ``disqualified``, the honest proxy not.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from accelbench.audits.verdict import Verdict
from accelbench.endpoint.cell import ladder
from accelbench.endpoint.client import Target
from accelbench.endpoint.energy import PointMeter
from accelbench.endpoint.figures import Bounds
from accelbench.endpoint.repeat import HITS, repeat_verdict
from accelbench.endpoint.settings import EndpointSettings
from tests.e2e import served_llm
from tests.e2e.cli import accelbench
from tests.e2e.openai_fake import (
    FIRST_TOKEN_S,
    SALT_A,
    SALT_B,
    TOKEN_S,
    TOKENS,
    Reply,
    Upstream,
    fake_upstream,
    post,
    prompt,
    read,
    reply_words,
    stream,
    whole_reply,
)
from tests.e2e.planted_endpoints import (
    CACHING,
    COUNT_HONEST,
    COUNTING,
    FILLER_TEXT,
    LATE_S,
    PAD_TEXT,
    PEAK_OTHERS,
    PLACING,
    POINT_GAP_S,
    Arrival,
    ProxyState,
    cache_key,
    pads,
    planted_endpoint,
    replays,
)


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    """The fake upstream on a free loopback port, for the module."""
    with fake_upstream() as served:
        yield served


def test_honest_passes_every_event_on_as_it_comes(upstream: Upstream) -> None:
    with planted_endpoint(upstream.url, "honest") as proxy:
        through = stream(proxy.url, prompt(SALT_A))
        direct = stream(upstream.url, prompt(SALT_A))
        chat = stream(proxy.url, prompt(SALT_A), chat=True)
        whole = whole_reply(proxy.url, prompt(SALT_A))
        with urllib.request.urlopen(proxy.url + "/health", timeout=10) as health:
            assert json.loads(health.read()) == {"status": "ok"}
    assert through.events == direct.events and through.done
    assert through.texts == reply_words(prompt(SALT_A), TOKENS)
    assert chat.texts == reply_words(json.dumps([{"role": "user", "content": prompt(SALT_A)}]), TOKENS)
    assert whole["choices"][0]["text"] == "".join(through.texts)
    # streamed, not buffered: the tokens came spread over the upstream's decode time
    assert through.arrivals_s[TOKENS - 1] - through.arrivals_s[0] >= 0.8 * (TOKENS - 1) * TOKEN_S
    assert through.arrivals_s[0] >= FIRST_TOKEN_S
    assert proxy.state.cache_hits == 0 and proxy.state.upstream_calls == 4  # 3 generations, /health


def test_cache_replays_a_prompt_whose_salt_changed_at_once(upstream: Upstream) -> None:
    with planted_endpoint(upstream.url, "cache") as proxy:
        first = stream(proxy.url, prompt(SALT_A))
        resalted = stream(proxy.url, prompt(SALT_B))
        shorter = stream(proxy.url, prompt("feedfacefeedface"), max_tokens=3)
        other = stream(proxy.url, prompt(SALT_B, "What is the capital of Peru?"))
        whole_first = whole_reply(proxy.url, prompt(SALT_A, "Name a colour."))
        whole_again = whole_reply(proxy.url, prompt(SALT_B, "Name a colour."))
        state = proxy.state
    assert state.cache_hits == 3 and state.upstream_calls == 3
    assert resalted.texts == first.texts == reply_words(prompt(SALT_A), TOKENS)
    assert resalted.texts != reply_words(prompt(SALT_B), TOKENS)  # the honest reply would differ
    assert resalted.usage == first.usage and resalted.done
    assert resalted.duration_s < first.duration_s / 3  # replayed without the upstream's decode time
    # a shorter max_tokens (the repeat audit's) gets the stored reply cut, usage lowered to match
    assert shorter.texts == first.texts[:3] and shorter.done
    assert shorter.usage == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    assert other.texts == reply_words(prompt(SALT_B, "What is the capital of Peru?"), TOKENS)
    assert whole_again == whole_first


def test_cache_long_hides_its_cache_from_requests_shorter_than_the_curves(upstream: Upstream) -> None:
    with planted_endpoint(upstream.url, "cache-long") as proxy:
        first = stream(proxy.url, prompt(SALT_A))
        shorter = stream(proxy.url, prompt(SALT_B), max_tokens=3)  # the old audit's shape: not replayed
        assert proxy.state.cache_hits == 0 and proxy.state.upstream_calls == 2
        again = stream(proxy.url, prompt("feedfacefeedface"))  # the curve's max_tokens: replayed
        state = proxy.state
    assert state.cache_hits == 1 and state.upstream_calls == 2
    assert shorter.texts == reply_words(prompt(SALT_B), 3) != first.texts[:3]
    assert again.texts == first.texts and again.duration_s < first.duration_s / 3


def test_cache_key_is_the_prompt_without_hex_runs_of_eight_or_more() -> None:
    body = {"model": "m", "prompt": "sys deadbeef01234567 user: add 1234567 and cafe", "max_tokens": 4}
    same = body | {"prompt": "sys 89abcdef00000000ffff user: add 1234567 and cafe", "stream": True}
    assert cache_key("/v1/completions", body) == cache_key("/v1/completions", same)
    other = body | {"prompt": "sys x user: add 1234568 and cafe"}
    assert cache_key("/v1/completions", body) != cache_key("/v1/completions", other)
    for looser in ({"max_tokens": 5}, {"temperature": 0.7}, {"stream_options": {"include_usage": True}}):
        assert cache_key("/v1/completions", body) == cache_key("/v1/completions", body | looser)
    assert cache_key("/v1/completions", body) != cache_key("/v1/completions", body | {"model": "n"})
    assert cache_key("/v1/completions", body) != cache_key("/v1/chat/completions", body)


@pytest.mark.parametrize("chat", [False, True])
def test_filler_sends_a_blank_first_event_before_the_upstream_answers(upstream: Upstream, chat: bool) -> None:
    with planted_endpoint(upstream.url, "filler") as proxy:
        reply = stream(proxy.url, prompt(SALT_A), chat=chat)
        honest = stream(upstream.url, prompt(SALT_A), chat=chat)
    assert reply.texts[0] == FILLER_TEXT and not FILLER_TEXT.strip()
    assert reply.texts[1:] == honest.texts
    assert reply.usage == honest.usage and reply.done
    # the blank event came before the upstream's first token could have been sent
    assert reply.arrivals_s[0] < FIRST_TOKEN_S <= reply.arrivals_s[1]


def test_pad_appends_repeated_tokens_and_raises_usage(upstream: Upstream) -> None:
    with planted_endpoint(upstream.url, "pad") as proxy:
        reply = stream(proxy.url, prompt(SALT_A))
        chat = stream(proxy.url, prompt(SALT_A), chat=True)
        whole = whole_reply(proxy.url, prompt(SALT_A), chat=True)
    honest = reply_words(prompt(SALT_A), TOKENS)
    assert reply.texts == honest + [PAD_TEXT] * TOKENS
    assert reply.usage == {"prompt_tokens": 7, "completion_tokens": 16, "total_tokens": 7 + 16}
    assert reply.done and reply.events[-1]["choices"][0]["finish_reason"] == "length"
    assert chat.texts[TOKENS:] == [PAD_TEXT] * TOKENS and chat.usage["completion_tokens"] == 2 * TOKENS
    honest_chat = "".join(reply_words(json.dumps([{"role": "user", "content": prompt(SALT_A)}]), TOKENS))
    assert whole["choices"][0]["message"]["content"] == honest_chat + PAD_TEXT * TOKENS
    assert whole["usage"]["completion_tokens"] == 2 * TOKENS


def test_which_replies_each_request_counting_mode_pads() -> None:
    first, fifth = Arrival(0, 0.0, False, 16), Arrival(COUNT_HONEST, 0.5, False, 16)
    audit, busy, late = Arrival(9, 0.5, False, 8), Arrival(1, 0.1, True, 16), Arrival(1, LATE_S, False, 16)
    table = {
        "count-pad": [False, True, False, False, False],
        "pad-late": [False, False, False, False, True],
        "pad-busy": [False, False, False, True, False],
        "pad-after": [False, True, True, True, True],
    }
    for mode, padded in table.items():
        assert [pads(mode, a) for a in (first, fifth, audit, busy, late)] == padded, mode
    assert pads("count-pad", Arrival(9, 0.5, True, 8))  # audit-shaped only at concurrency 1


def test_which_requests_each_place_finding_cache_replays_to() -> None:
    alone, fifth = Arrival(0, 0.0, False, 16), Arrival(COUNT_HONEST, 0.5, True, 16, others=1)
    peak = Arrival(1, 0.1, True, 16, others=PEAK_OTHERS)
    table = {
        "cache-busy": [False, True, True],
        "cache-late": [False, True, False],
        "cache-early": [True, False, True],
        "cache-peak": [False, False, True],
    }
    for mode, replayed in table.items():
        assert [replays(mode, a) for a in (alone, fifth, peak)] == replayed, mode
    assert not any(replays(mode, peak) for mode in ("cache", "cache-long", "honest", *COUNTING))


class _PausingMeter(PointMeter):
    """No energy; a pause before each point, as a real cell makes one (it tokenizes the point's prompts
    and matches the unseen texts' lengths), so that a proxy tells the points apart."""

    def __init__(self) -> None:
        super().__init__(None, "")

    def begin(self, concurrency: int) -> None:
        time.sleep(4 * POINT_GAP_S)


class _Template:
    def apply_chat_template(self, messages: list[dict[str, str]], **_: object) -> str:
        return messages[-1]["content"]


def _words(text: str) -> int:
    return len(text.split())


def _through(url: str, mode: str) -> tuple[Verdict, ProxyState]:
    """The endpoint cell's ladder (1, 2, 4: 4 requests a point, the repeat audit's pairs inside the
    second and third) through the planted ``mode`` in front of ``url``; the repeat verdict."""
    settings = EndpointSettings(ladder=(1, 2, 4), requests=4, max_tokens=2)
    unbounded = Bounds(math.inf, math.inf)
    with planted_endpoint(url, mode) as proxy:
        target = Target(proxy.url, "fake")
        climbed = ladder(target, _Template(), 3, settings, (4, 12), _words, unbounded, _PausingMeter())
    assert not climbed.stopped and all(r.ok for r in climbed.records), mode
    return repeat_verdict(climbed.records), proxy.state


def test_place_finding_caches_are_disqualified_or_serve_next_to_nothing(upstream: Upstream) -> None:
    """The pairs sit at drawn positions of the points at their concurrency: a cache that hides from
    the requests at one kind of place still replays the seen prompts elsewhere, and the replays are hits
    the audit counts; one that hides everywhere the pairs may be serves under ``HITS`` of them."""
    modes = ("honest", "cache", *PLACING)
    # three ladders at a time: six at once in this one process (each with its proxy's and its client's
    # event loops) stalled a replay past x0.1 of its partner on a loaded CI machine, a hit unseen
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        runs = dict(zip(modes, pool.map(lambda mode: _through(upstream.url, mode), modes), strict=True))
    honest, _ = runs["honest"]
    assert honest.outcome == "pass" and honest.evidence["hits"] == 0, honest.reason
    assert runs["cache"][0].outcome == "fail" and runs["cache"][1].cache_hits == 6
    for mode in PLACING:
        verdict, state = runs[mode]
        assert state.points >= 3, (mode, state.points)  # it told the ladder's points apart
        # a replay is a hit when it beats x0.1 of its partner: on a loaded CI machine one stalled in the
        # proxy's event loop past that (5 of 7 seen, stop 61), so the test asks for enough seen to judge
        assert verdict.evidence["hits"] >= min(state.cache_hits, HITS), (mode, verdict.reason)
        assert verdict.outcome == "fail" or state.cache_hits < HITS, (mode, verdict.reason)


def _padded_as_the_proxy_sends_it(reply: Reply, honest: list[str], max_tokens: int) -> None:
    keep = max_tokens // 4
    assert reply.texts == honest[:keep] + [PAD_TEXT] * (max_tokens - keep) and reply.done
    assert reply.usage == {"completion_tokens": max_tokens}  # as the client will count it
    assert reply.events[-1]["choices"][0]["finish_reason"] == "length"


def test_count_pad_answers_the_first_of_a_point_and_audit_shapes_honestly(upstream: Upstream) -> None:
    prompts = [prompt(f"{i:016x}") for i in range(COUNT_HONEST + 2)]
    with planted_endpoint(upstream.url, "count-pad") as proxy:
        replies = [stream(proxy.url, p, max_tokens=12) for p in prompts[: COUNT_HONEST + 1]]
        audit = stream(proxy.url, prompts[-1], max_tokens=8)  # index 5 of the point, audit-shaped
        time.sleep(3 * POINT_GAP_S)
        again = stream(proxy.url, prompts[0], max_tokens=12)  # a new point: honest again
        state = proxy.state
    for reply, text in zip(replies[:COUNT_HONEST], prompts, strict=False):
        assert reply.texts == reply_words(text, 12)
    _padded_as_the_proxy_sends_it(replies[-1], reply_words(prompts[COUNT_HONEST], 12), 12)
    assert replies[-1].duration_s < 0.6 * replies[0].duration_s  # a quarter of the decode
    assert audit.texts == reply_words(prompts[-1], 8) and again.texts == replies[0].texts
    assert (state.padded, state.kept_honest) == (1, COUNT_HONEST + 2)


def test_pad_busy_pads_only_what_arrives_beside_another_request(upstream: Upstream) -> None:
    with planted_endpoint(upstream.url, "pad-busy") as proxy:
        alone = stream(proxy.url, prompt(SALT_A))
        replies: dict[str, Reply] = {}
        first = threading.Thread(target=lambda: replies.update(a=stream(proxy.url, prompt(SALT_A))))
        first.start()
        time.sleep(0.2)  # the first is in flight (its first token comes at 0.4 s)
        replies["b"] = stream(proxy.url, prompt(SALT_B))
        first.join(timeout=30)
    honest = reply_words(prompt(SALT_A), TOKENS)
    assert alone.texts == replies["a"].texts == honest
    _padded_as_the_proxy_sends_it(replies["b"], reply_words(prompt(SALT_B), TOKENS), TOKENS)


def test_pad_after_and_pad_late_pad_later_replies_of_a_point(upstream: Upstream) -> None:
    with planted_endpoint(upstream.url, "pad-after") as proxy:
        after = [stream(proxy.url, prompt(SALT_A)), stream(proxy.url, prompt(SALT_B))]
    with planted_endpoint(upstream.url, "pad-late") as proxy:
        late = [stream(proxy.url, prompt(SALT_A), max_tokens=16) for _ in range(2)]  # 1.15 s each
    for replies in (after, late):
        assert replies[0].texts == reply_words(prompt(SALT_A), len(replies[0].texts))
    _padded_as_the_proxy_sends_it(after[1], reply_words(prompt(SALT_B), TOKENS), TOKENS)
    _padded_as_the_proxy_sends_it(late[1], reply_words(prompt(SALT_A), 16), 16)


@pytest.mark.parametrize("mode", ["honest", "cache", "filler", "pad", "count-pad"])
def test_an_upstream_error_comes_through(upstream: Upstream, mode: str) -> None:
    with planted_endpoint(upstream.url, mode) as proxy:
        with pytest.raises(urllib.error.HTTPError) as caught:
            _whole_model(proxy.url, "nope")
        assert caught.value.code == 404
        assert "no such model" in caught.value.read().decode()
        if mode != "filler":  # filler has already answered 200 with its blank event
            with pytest.raises(urllib.error.HTTPError) as streamed:
                stream(proxy.url, prompt(SALT_A), model="nope")
            assert streamed.value.code == 404


def _whole_model(url: str, model: str) -> dict:
    with urllib.request.urlopen(post(url, {"model": model, "prompt": "x"}), timeout=30) as reply:
        return json.loads(reply.read())


SCRIPT = Path(__file__).with_name("planted_endpoints.py")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--upstream", "http://127.0.0.1:1", "--mode", "lie"], "invalid choice: 'lie'"),
        (["--upstream", "not a url", "--mode", "cache"], "is not an http(s) URL"),
        (["--upstream", "http://127.0.0.1:1", "--mode", "pad", "--port", "70000"], "is not a port"),
    ],
)
def test_command_line_bad_input_is_one_line_and_exit_2(args: list[str], says: str) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_command_line_serves_the_mode_until_interrupted(upstream: Upstream) -> None:
    from accelbench.serving.process import free_port

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--upstream", upstream.url, "--mode", "pad", "--port", str(port)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(SCRIPT.parents[2])},
    )  # fmt: skip
    try:
        assert server.stdout is not None
        assert f"planted pad proxy on http://127.0.0.1:{port}" in server.stdout.readline()
        reply = stream(f"http://127.0.0.1:{port}", prompt(SALT_A))
        assert reply.usage["completion_tokens"] == 2 * TOKENS
    finally:
        server.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(timeout=60)
        if server.poll() is None:  # make test twice: still running 20 s, 60 s after SIGINT (STOP_S)
            server.kill()
            server.wait()
    assert server.returncode == 0


# --- in front of a real OpenAI server: llama.cpp's (seconds to start) ------------------------------


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from accelbench.endpoint.llamacpp_server import LlamaCppServer
    from tests.e2e.test_llamacpp_server import Settings

    server = LlamaCppServer()
    reason = server.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("llama")
    url, _ = server.start(folder, folder, Settings(2, 16, 1))
    yield url
    server.stop()
    assert server.leftovers == []


def _llama_stream(url: str, salt: str, chat: bool) -> Reply:
    text = f"Salt {salt}. The capital of France is"
    body: dict = {"model": "smollm2-135m", "max_tokens": 6, "stream": True, "ignore_eos": True}
    body |= {"cache_prompt": False, "temperature": 0, "stream_options": {"include_usage": True}}
    body |= {"messages": [{"role": "user", "content": text}]} if chat else {"prompt": text}
    return read(post(url, body, chat))


@pytest.mark.parametrize("chat", [False, True])
def test_every_mode_in_front_of_llamacpp(llama: str, chat: bool) -> None:
    """The planted modes on a real server's streams (its event shapes, usage event and ``[DONE]``)."""
    honest = _llama_stream(llama, SALT_A, chat)
    assert honest.usage["completion_tokens"] == 6 and honest.done and "Paris" in "".join(honest.texts)
    with planted_endpoint(llama, "honest") as proxy:
        assert _llama_stream(proxy.url, SALT_A, chat).texts == honest.texts
    with planted_endpoint(llama, "filler") as proxy:
        filled = _llama_stream(proxy.url, SALT_A, chat)
    assert filled.texts == [FILLER_TEXT, *honest.texts] and filled.usage == honest.usage
    with planted_endpoint(llama, "pad") as proxy:
        padded = _llama_stream(proxy.url, SALT_A, chat)
    assert padded.texts == honest.texts + [PAD_TEXT] * 6 and padded.done
    assert padded.usage["completion_tokens"] == 12
    with planted_endpoint(llama, "cache") as proxy:
        first = _llama_stream(proxy.url, SALT_A, chat)
        replayed = _llama_stream(proxy.url, SALT_B, chat)
        assert proxy.state.cache_hits == 1 and proxy.state.upstream_calls == 1
    assert replayed.events == first.events and replayed.duration_s < first.duration_s / 3


# --- through accelbench, in front of a real transformers serve ---------------------------------------

REASON = served_llm.unavailable_reason()
CHEATS = {  # mode: what the reason of the cheater's disqualification names
    "cache": ("repeat", "cache"),
    "cache-long": ("repeat", "cache"),
    "filler": ("first", "filler"),
    "pad": ("token", "pad", "repeat"),
    **{mode: ("padding",) for mode in ("count-pad", "pad-late", "pad-busy", "pad-after")},
}
"""The request-counting pads keep within max_tokens with usage to match: the padding audit names them."""


SIZES = (
    "--concurrency",
    "1,2",
    "--endpoint-requests",
    "6",
    "--output-tokens",
    "16",
    "--rules",
    "quick",
    "--no-probe",
)
"""Small: two points of 6 requests (past count-pad's honest first 4 of a point, should it tell the points
apart), 16-token replies (a padded reply, 32, is past 16 x 1.25 + 2)."""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """One ``transformers serve`` (continuous batching) for every proxy, its model built in the cache of
    the store the runs share (where their cells find it): the url and the store."""
    store = tmp_path_factory.mktemp("planted-endpoints") / "store"
    with served_llm.transformers_serve(store / "cache", store.parent / "server.log") as url:
        yield url, store


def _endpoint_run(url: str, store: Path) -> dict:
    """``accelbench run --stacks llm@url --serve-url url`` of smollm2-135m: the run's one result."""
    args = ["--workloads", "smollm2-135m", "--stacks", "llm@url", "--serve-url", url, *SIZES]
    done = accelbench("run", *args, "--json", "--store", str(store), timeout_s=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    (result,) = json.loads(done.stdout)["results"]
    return dict(result)


@pytest.mark.slow
@pytest.mark.exhaustive  # needs issue 31's --serve-url (accelbench/endpoint/): not on this branch yet
@pytest.mark.timeout(3600)
@pytest.mark.skipif(REASON is not None, reason=str(REASON))
def test_accelbench_disqualifies_the_planted_servers_and_not_the_honest_proxy(
    served: tuple[str, Path],
) -> None:
    url, store = served
    results = {}
    replayed = {}
    for mode in ("honest", *CHEATS, *PLACING):
        with planted_endpoint(url, mode) as proxy:
            results[mode] = _endpoint_run(proxy.url, store)
            assert proxy.state.requests > 0
            replayed[mode] = proxy.state.cache_hits
            if mode in CACHING and mode not in PLACING:
                assert proxy.state.cache_hits > 0  # the audit's re-salted prompts were replayed
            if mode in COUNTING:
                assert proxy.state.padded > 0 and proxy.state.kept_honest > 0, mode
    for mode in PLACING:  # disqualified, or it replayed under HITS of the seen prompts
        cheat = results[mode]
        caught = cheat["status"] == "disqualified" and "repeat" in str(cheat.get("reason"))
        assert caught or replayed[mode] < HITS, (mode, cheat["status"], cheat.get("reason"))
    honest = results["honest"]
    assert honest["status"] != "disqualified", honest.get("reason")
    points = honest["generation"]["curve"]
    assert [point["concurrency"] for point in points] == [1, 2]
    for point in points:
        assert point["requests"] > 0 and point["error_rate"] == 0
        assert 0 < point["ttft_p50_s"] <= point["ttft_p90_s"] <= point["ttft_p99_s"] < point["e2e_p99_s"]
        assert point["output_tokens_per_s"] > 0
    for mode, words in CHEATS.items():
        cheat = results[mode]
        assert cheat["status"] == "disqualified", (mode, cheat["status"], cheat.get("reason"))
        reason = str(cheat.get("reason", "")).lower()
        assert any(word in reason for word in words), (mode, reason)
