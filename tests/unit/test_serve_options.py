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
    assert config.served.url == "http://10.0.0.2:8000"
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


@pytest.mark.parametrize("address", ["ray://10.0.0.2:10001", "10.0.0.2", "http://h:1", "h:port", ""])
def test_a_serve_cluster_must_be_a_ray_head_address(address: str) -> None:
    with pytest.raises(UserError, match="serve_cluster must be HOST:PORT or auto"):
        with_overrides(suite("tiny"), {"serve_cluster": address})


def test_the_serve_cluster_is_kept_and_needs_a_ray_serve_stack() -> None:
    from accelbench.cli.serving import served_overrides

    for address in ("10.0.0.2:6379", "auto", "head-node.local:6379"):
        assert with_overrides(suite("tiny"), {"serve_cluster": address}).to_dict()["serve_cluster"] == address
    given = served_overrides({"serve_cluster": "h:6379"}, ("onnxruntime",), ["ray-serve-nobatch"])
    assert given["stacks"] == ("onnxruntime", "onnxruntime@ray-serve-nobatch")
    named = served_overrides({"serve_cluster": "h:6379", "stacks": ("onnxruntime@ray-serve",)}, ("null",), ())
    assert named["stacks"] == ("onnxruntime@ray-serve",)
    for servers in ((), ("triton",)):
        with pytest.raises(UserError, match="--serve-cluster deploys the Ray Serve stacks"):
            served_overrides({"serve_cluster": "h:6379"}, ("onnxruntime",), servers)


def test_the_serve_proxy_listens_on_loopback_unless_the_cluster_is_elsewhere() -> None:
    from accelbench.serving.ray_serve import proxy_hosts

    assert (
        proxy_hosts(None)
        == proxy_hosts("auto")
        == proxy_hosts("127.0.0.1:6379")
        == ("127.0.0.1", "127.0.0.1")
    )
    assert proxy_hosts("10.0.0.2:6379") == ("0.0.0.0", "10.0.0.2")


def test_an_llm_run_gets_the_endpoint_stacks_of_its_servers() -> None:
    from accelbench.cli.serving import generative, served_overrides
    from accelbench.endpoint.settings import concurrencies

    assert generative(("smollm2-135m",)) and not generative(("resnet50",))
    assert not generative(("no-such-workload",))  # the runner names it as unknown
    assert with_served(["torch-eager"], ["transformers-cb", "url"], llm=True) == (
        "torch-eager",
        "llm@transformers-cb",
        "llm@url",
    )
    with pytest.raises(UserError, match=r"^no served variant of torch-eager on transformers;"):
        with_served(["torch-eager"], ["transformers"], llm=False)
    given = served_overrides({"stacks": ("llm@url",), "serve_url": "http://h:1"}, ("null",), (), llm=True)
    assert given["stacks"] == ("llm@url",)
    assert concurrencies("1,2, 8") == (1, 2, 8) and concurrencies(None) is None
    with pytest.raises(UserError, match="--concurrency takes comma-separated whole numbers"):
        concurrencies("1,x")


@pytest.mark.parametrize(
    ("setting", "problem"),
    [
        ({"concurrency": (0, 2)}, "concurrency values must be in"),
        ({"api_key_env": "A B"}, "api_key_env must be an environment variable name"),
        ({"output_tokens": -1}, "output_tokens must be >= 0"),
        ({"endpoint_api": "responses"}, "endpoint_api must be one of chat, completions, got 'responses'"),
        ({"arrivals": "uniform"}, "arrivals must be one of concurrency, poisson, got 'uniform'"),
    ],
)
def test_endpoint_settings_are_checked(setting: dict[str, object], problem: str) -> None:
    with pytest.raises(UserError, match=problem):
        with_overrides(suite("tiny"), setting)


class VendorLlm:
    """A plugin's LLM workload, outside ``accelbench.generation``: it declares the ``tokens`` driver."""

    driver = "tokens"


def test_a_plugin_llm_workload_is_generative_by_its_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    from accelbench import registry
    from accelbench.cli.serving import generative

    monkeypatch.setitem(registry.WORKLOADS, "vendor-llm", f"{__name__}:VendorLlm")
    assert generative(("resnet50", "vendor-llm"))
