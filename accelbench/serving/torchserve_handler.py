"""The TorchServe handler: ONNX Runtime on the v2 binary messages accelbench's client sends.

Packed into the model archive by ``accelbench.serving.torchserve_app`` and loaded by TorchServe's
Python worker (which runs on the Python that started TorchServe, so ``accelbench`` imports). The archive
holds ``server.json`` (``models``: rows -> ONNX file name, ``threads``). TorchServe hands ``handle`` up
to ``batchSize`` waiting requests at once (its dynamic batching): their rows are padded into the
smallest exported size that holds them (``OrtModels``) and each request gets its own v2 reply, with the
``Inference-Header-Content-Length`` header the client reads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from accelbench.serving import protocol
from accelbench.serving.ort_models import OrtModels

_models: OrtModels | None = None


def _load(model_dir: str) -> OrtModels:
    folder = Path(model_dir)
    config = json.loads((folder / "server.json").read_text())
    files = {rows: str(folder / name) for rows, name in config["models"].items()}
    return OrtModels(files, int(config["threads"]))


def _header_length(context: Any, index: int) -> int | None:
    headers = context.get_all_request_header(index) or {}
    for key, value in headers.items():
        if str(key).lower() == protocol.HEADER_LENGTH.lower():
            return int(value)
    return None


def handle(data: list[dict[str, Any]] | None, context: Any) -> list[bytes] | None:
    """TorchServe's entry point: one v2 reply per request in ``data`` (None for the load-time call)."""
    global _models
    if _models is None:
        _models = _load(context.system_properties["model_dir"])
    if data is None:
        return None
    rows = []
    for index, request in enumerate(data):
        body = request.get("body") or request.get("data")
        if not isinstance(body, bytes | bytearray):
            raise ValueError(f"request {index}: expected a binary body, got {type(body).__name__}")
        rows.append(protocol.decode(bytes(body), _header_length(context, index), "inputs"))
    replies = []
    for index, output in enumerate(_models.infer(rows)):
        reply, header = protocol.encode({"output": output}, "outputs")
        context.set_response_header(index, protocol.HEADER_LENGTH, str(header))
        context.set_response_content_type(index, protocol.CONTENT_TYPE)
        replies.append(reply)
    return replies
