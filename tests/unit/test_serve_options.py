"""``--serve`` and ``--serve-url``: which stacks a run gets, and what a serve URL must look like."""

from __future__ import annotations

import pytest

from accelbench.cli.serving import with_served
from accelbench.config import suite, with_overrides
from accelbench.errors import UserError


def test_serve_keeps_the_in_process_stacks_and_adds_their_served_variants() -> None:
    assert with_served(["onnxruntime", "null"], ["torchserve", "url"]) == (
        "onnxruntime",
        "null",
        "onnxruntime@torchserve",
        "onnxruntime@url",
    )


def test_a_served_stack_named_outright_counts_for_its_server() -> None:
    assert with_served(["onnxruntime@url", "null"], ["url"]) == ("onnxruntime@url", "null")


def test_a_server_no_chosen_stack_has_is_a_one_line_error() -> None:
    with pytest.raises(
        UserError, match=r"^no served variant of null on url; served stacks: .*onnxruntime@url"
    ):
        with_served(["null"], ["url"])


@pytest.mark.parametrize("url", ["127.0.0.1:8000", "ftp://host", ""])
def test_a_serve_url_must_be_http(url: str) -> None:
    with pytest.raises(UserError, match="serve_url must be an http:// or https:// address"):
        with_overrides(suite("tiny"), {"serve_url": url})


def test_the_serve_url_is_kept_with_the_run() -> None:
    config = with_overrides(suite("tiny"), {"serve_url": "http://10.0.0.2:8000"})
    assert config.serve_url == "http://10.0.0.2:8000"
    assert config.to_dict()["serve_url"] == "http://10.0.0.2:8000"


def test_served_overrides_extend_the_given_or_the_suite_stacks() -> None:
    from accelbench.cli.serving import served_overrides

    assert served_overrides({"stacks": None}, ("onnxruntime",), ()) == {"stacks": None}
    given = served_overrides(
        {"stacks": ("onnxruntime",), "serve_url": "http://h:1"}, ("null",), ["torchserve"]
    )
    assert given["stacks"] == ("onnxruntime", "onnxruntime@torchserve", "onnxruntime@url")
    assert served_overrides({}, ("onnxruntime", "null"), ["triton"])["stacks"] == (
        "onnxruntime",
        "null",
        "onnxruntime@triton",
    )
