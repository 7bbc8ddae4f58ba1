"""The endpoint client and driver against a stdlib stub server: records, statuses, the API key, the
fixed-concurrency loop, and the bad endpoints (401, unreachable, not streaming, dying mid-stream,
wrong model) each as one status or one-line reason."""

from __future__ import annotations

import pytest

from accelbench.endpoint.cell import remote_length_fields, remote_model_id
from accelbench.endpoint.client import Prompt, Target, body
from accelbench.endpoint.driver import Load, run_point
from accelbench.errors import Unavailable
from accelbench.serving.process import free_port
from tests.unit.endpoint_stub import PIECES, stub


def _prompts(n: int) -> list[Prompt]:
    return [Prompt(f"{i:032x}", ({"role": "user", "content": f"[{i:032x}] hi"},), "text") for i in range(n)]


def _words(text: str) -> int:
    return len(text.split())


def test_an_honest_stream_is_recorded_with_its_times_and_counts() -> None:
    with stub() as url:
        (record,) = run_point(Target(url, "tiny-llama"), _prompts(1), Load(1, 6), _words)
    assert record.ok and record.error == "" and record.finish_reason == "length"
    assert record.text == "".join(PIECES)
    assert record.output_tokens == 5 and record.usage_output_tokens == len(PIECES)
    assert record.usage_prompt_tokens == 7
    assert len(record.chunk_s) == len(PIECES)
    assert record.issue_s <= record.send_s <= record.first_content_s == record.chunk_s[0] <= record.end_s
    assert not record.filler_first_chunk


def test_the_ttft_clock_stops_at_the_first_non_empty_chunk_a_filler_too() -> None:
    """As MLPerf and AIPerf time it (issue 44): a fake early chunk is caught by the reply it starts."""
    with stub("filler") as url:
        (record,) = run_point(Target(url, "tiny-llama"), _prompts(1), Load(1, 6), _words)
    assert record.ok and record.filler_first_chunk and record.first_chunk_text == " "
    assert record.first_content_s == record.chunk_s[0] < record.chunk_s[1]


def test_a_stream_without_done_ends_on_close() -> None:
    with stub("nodone") as url:
        (record,) = run_point(Target(url, "tiny-llama"), _prompts(1), Load(1, 6), _words)
    assert record.ok and record.text == "".join(PIECES)


def test_the_api_key_goes_in_the_header_and_a_wrong_one_is_401() -> None:
    with stub(key="s3cret") as url:
        (good,) = run_point(Target(url, "tiny-llama", api_key="s3cret"), _prompts(1), Load(1, 6), _words)
        (bad,) = run_point(Target(url, "tiny-llama", api_key="nope"), _prompts(1), Load(1, 6), _words)
    assert good.ok
    assert bad.status == "http 401" and bad.error == '{"error": "invalid api key: Bearer ***"}'
    assert "nope" not in repr(Target(url, "m", api_key="nope"))


@pytest.mark.parametrize(("mode", "status"), [("json", "not streaming"), ("die", "truncated")])
def test_a_server_that_does_not_stream_or_dies_mid_stream_is_a_status(mode: str, status: str) -> None:
    with stub(mode) as url:
        (record,) = run_point(Target(url, "tiny-llama"), _prompts(1), Load(1, 6), _words)
    assert record.status == status and not record.ok and record.error


def test_an_unreachable_server_is_a_status_not_an_exception() -> None:
    (record,) = run_point(
        Target(f"http://127.0.0.1:{free_port()}", "m", timeout_s=5), _prompts(1), Load(1, 6), _words
    )
    assert record.status == "ClientConnectorError" and record.error


def test_fixed_concurrency_keeps_n_in_flight_and_sends_each_prompt_once() -> None:
    with stub() as url:
        records = run_point(Target(url, "tiny-llama"), _prompts(9), Load(4, 6), _words)
    assert [r.index for r in records] == list(range(9))
    assert sorted(r.salt for r in records) == sorted(p.salt for p in _prompts(9))
    assert all(r.ok and r.concurrency == 4 for r in records)
    in_flight = [sum(r.send_s <= t.send_s < r.end_s for r in records) for t in records]
    assert max(in_flight) == 4  # at every send, at most 4 in flight, and 4 at some point
    assert sorted(r.issue_s for r in records)[:4] == sorted(r.issue_s for r in records if r.index < 4)


def test_the_body_is_the_openai_schema_plus_the_servers_own_fields() -> None:
    prompt = _prompts(1)[0]
    chat = body(Target("http://h", "m"), prompt, 16)
    assert chat == {
        "model": "m", "stream": True, "max_tokens": 16, "temperature": 0.0,
        "stream_options": {"include_usage": True}, "messages": [dict(prompt.messages[0])],
    }  # fmt: skip
    completion = body(Target("http://h/v1", "m", api="completions", extra_body={"x": 1}), prompt, 4)
    assert completion["prompt"] == "text" and completion["x"] == 1 and "messages" not in completion
    assert Target("http://h/v1/", "m", api="completions").endpoint == "http://h/v1/completions"


def test_a_server_that_lists_other_models_is_unavailable_with_their_names() -> None:
    with stub(models=("gpt-x", "other")) as url:
        with pytest.raises(Unavailable, match=r"serves gpt-x, other, not tiny-llama"):
            remote_model_id(url, "tiny-llama", None)
        assert remote_model_id(url, "gpt-x", None) == "gpt-x"


def test_the_reply_length_is_forced_where_the_server_says_what_it_is() -> None:
    for owner, fields in (("vllm", {"ignore_eos": True}), ("llamacpp", {"ignore_eos": True}), ("acme", {})):
        with stub(owner=owner) as url:
            assert remote_length_fields(url, "tiny-llama", None) == fields, owner
            assert remote_length_fields(url, "other", None) == {}  # not the model it serves
    with stub() as url:  # no owned_by: nothing forced (replies that end early are a warning)
        assert remote_length_fields(url, "tiny-llama", None) == {}
    assert remote_length_fields("http://127.0.0.1:1", "tiny-llama", None) == {}  # no /v1/models
