"""The endpoint stacks: ``llm@url`` (the server at ``--serve-url``) and ``llm@<server>`` (a server of
``accelbench.endpoint.servers`` that the cell starts and stops). Listed with the generating stacks, so
the LLM workloads run on them; ``accelbench.cell.process`` hands their cells to ``endpoint.cell``.
"""

from __future__ import annotations

from typing import ClassVar

from accelbench.versions import with_python

URL = "url"


class EndpointStack:
    """An LLM served behind an OpenAI-compatible endpoint."""

    driver: ClassVar[str] = "endpoint"
    server: ClassVar[str] = URL
    precision: ClassVar[str] = "server's"
    weight_format: ClassVar[str] = "server's"

    @property
    def layers(self) -> dict[str, str]:
        """What runs the model: the server's (accelbench only measures its endpoint)."""
        served = "served behind an OpenAI-compatible endpoint"
        return {
            "framework": f"{self.server} ({served})",
            "compiler": "the server's",
            "platform": "the server's",
        }

    @property
    def name(self) -> str:
        """``llm@<server>``."""
        return f"llm@{self.server}"

    def unavailable_reason(self, device: str) -> str | None:
        """The server's reason (``llm@url``: none, the cell checks the address)."""
        if self.server == URL:
            return None
        from accelbench.endpoint.servers import get_server

        if device != "cpu":
            return f"{self.name} is wired for cpu, not {device}"
        return get_server(self.server).unavailable_reason()

    def versions(self) -> dict[str, str]:
        """The client's versions (a remote server's are unknown)."""
        return with_python(("accelbench", "aiohttp", "transformers"))


class UrlEndpoint(EndpointStack):
    """The server at ``--serve-url``; accelbench neither starts nor stops it."""

    server: ClassVar[str] = URL


class TransformersEndpoint(EndpointStack):
    """``transformers serve``, one request at a time."""

    server: ClassVar[str] = "transformers"


class TransformersCbEndpoint(EndpointStack):
    """``transformers serve --continuous-batching``."""

    server: ClassVar[str] = "transformers-cb"


class LlamaCppEndpoint(EndpointStack):
    """llama.cpp's server from the ``xllamacpp`` wheel, started by accelbench."""

    server: ClassVar[str] = "llamacpp"


class VllmEndpoint(EndpointStack):
    """``vllm serve`` (GPU machines)."""

    server: ClassVar[str] = "vllm"


class SglangEndpoint(EndpointStack):
    """SGLang (GPU machines)."""

    server: ClassVar[str] = "sglang"
