"""``onnxruntime@torchserve`` (TorchServe's dynamic batching) and ``onnxruntime@torchserve-nobatch``.

The server is ``accelbench.serving.torchserve_app`` in a process of its own: TorchServe 0.12 (a Java
frontend, a Python worker on this Python) with a model archive whose handler runs ONNX Runtime on v2
binary messages, posted to ``/predictions/model``. Needs the ``torchserve`` extra and a Java runtime
(``java`` on PATH; Debian: ``apt-get install openjdk-17-jre-headless``); without either the stacks are
unavailable with that hint. Ready = the management API lists the model's worker as ``READY``
(TorchServe's ``/ping`` says healthy while workers crash-loop). The server's own timings are
TorchServe's Prometheus counters (``STATS``): queue and inference time per request. Upstream marks
TorchServe "limited maintenance"; 0.12.0 is its last release.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from accelbench.serving import metrics, process, stack
from accelbench.stacks.base import CellContext, ModelSpec

JAVA_HINT = "no Java runtime (java) on PATH; TorchServe needs one: apt-get install openjdk-17-jre-headless"
STATS = {
    "ts_queue_latency_microseconds": "server_queue",
    "ts_inference_latency_microseconds": "server_inference",
}
"""TorchServe's cumulative microsecond counters -> detail names (``<name>_ms_mean`` per request)."""
REQUESTS = "ts_inference_requests_total"


class TorchServe(stack.ServedStack):
    """ONNX Runtime in a TorchServe model archive, waiting requests joined by TorchServe's batcher."""

    name: ClassVar[str] = "onnxruntime@torchserve"
    server: ClassVar[str] = "torchserve"
    install: ClassVar[str] = "accelbench[onnxruntime,torchserve]"
    modules: ClassVar[tuple[str, ...]] = ("onnxruntime", "ts", "model_archiver", "yaml", "aiohttp")
    distributions: ClassVar[tuple[str, ...]] = (
        "onnxruntime",
        "torchserve",
        "torch-model-archiver",
        "aiohttp",
    )
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "ONNX (from PyTorch), served by TorchServe (HTTP, v2 binary messages)",
        "compiler": "ONNX Runtime graph optimizer",
        "platform": "CPU EP (MLAS)",
    }

    def unavailable_reason(self, device: str) -> str | None:
        """The ONNX stack's reasons and the packages', then Java's."""
        return super().unavailable_reason(device) or (None if shutil.which("java") else JAVA_HINT)

    def start_server(self, files: Mapping[int, Path], spec: ModelSpec, ctx: CellContext) -> stack.Served:
        """Write the script's config and start it; ready when the model's worker is READY."""
        ports = [process.free_port() for _ in range(3)]
        temp_dir = tempfile.mkdtemp(prefix="abts-", dir="/tmp")
        config = stack.server_config(
            files,
            ctx,
            max_batch=max(files) // min(files),
            http_port=ports[0],
            management_port=ports[1],
            metrics_port=ports[2],
            temp_dir=temp_dir,
        )
        config_path = stack.write_config(ctx, "torchserve", config)
        url = f"http://{process.HOST}:{ports[0]}"
        model_url = f"http://{process.HOST}:{ports[1]}/models/{stack.MODEL_NAME}"
        server = process.start(
            self.server,
            [sys.executable, "-m", "accelbench.serving.torchserve_app", str(config_path)],
            ports,
            config_path.with_suffix(".log"),
            lambda: worker_ready(metrics.http_text(model_url)),
            stack.START_TIMEOUT_S,
            env={**os.environ},
            after_stop=lambda: shutil.rmtree(temp_dir, ignore_errors=True),
        )
        metrics_url = f"http://{process.HOST}:{ports[2]}/metrics"
        endpoint = f"{url}/predictions/{stack.MODEL_NAME}"
        return stack.Served(url, server, lambda: torchserve_stats(metrics.http_text(metrics_url)), endpoint)


class TorchServeNoBatch(TorchServe):
    """The same archive with batching off: one request per handler call."""

    name: ClassVar[str] = "onnxruntime@torchserve-nobatch"
    server: ClassVar[str] = "torchserve-nobatch"
    batching: ClassVar[bool] = False


def worker_ready(text: str) -> bool:
    """True when the management API's description of the model (``text``) has a READY worker."""
    described = json.loads(text)
    workers = [w for model in described for w in model.get("workers", [])]
    return any(worker.get("status") == "READY" for worker in workers)


def torchserve_stats(text: str) -> dict[str, str]:
    """Mean queue and inference milliseconds per request, and the request count, from TorchServe's
    Prometheus ``text`` (cumulative counters since the server started)."""
    totals = metrics.totals(text, [*STATS, REQUESTS])
    requests = totals.get(REQUESTS, 0.0)
    found = {"server_requests": f"{requests:.0f}"}
    for metric, name in STATS.items():
        if requests and metric in totals:
            found[f"{name}_ms_mean"] = f"{totals[metric] / requests / 1e3:.6g}"
    return found
