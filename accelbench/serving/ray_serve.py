"""``onnxruntime@ray-serve`` (dynamic batching, ``@serve.batch``) and ``onnxruntime@ray-serve-nobatch``.

The server is ``accelbench.serving.ray_app`` in a process of its own: a local Ray (``ray.init`` in that
process, no dashboard, every listener on 127.0.0.1 where Ray allows it), Serve's HTTP proxy on a free
port and Ray's metrics on another. Ray's session folder goes to a short ``/tmp/abray-*`` folder (Ray's
socket paths must fit in 107 bytes; the cell's run folder is too deep), removed after the stop. The
server's own timings are Serve's Prometheus histograms (``STATS``), read after the run.

With ``--serve-cluster HOST:PORT`` (``CellContext.serve_cluster``) the script joins that Ray cluster
instead, starts Serve there (refused when Serve already runs on it: its HTTP port would not be this
cell's), deploys the model on the cluster's nodes and shuts its Serve down at the stop; the cluster
lives on. Serve's proxy then listens on the head, at the host of the address (all interfaces unless
it is a loopback one), and the cluster's metrics are not this cell's to read.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from accelbench.serving import metrics, process, stack
from accelbench.stacks.base import CellContext, ModelSpec

STATS = {
    "ray_serve_deployment_processing_latency_ms": "server_processing",
    "ray_serve_http_request_latency_ms": "server_http_request",
    "ray_serve_batch_wait_time_ms": "server_batch_wait",
    "ray_serve_batch_execution_time_ms": "server_batch_execution",
}
"""Serve's histograms -> detail names (``<name>_ms_mean`` and ``<name>_count``). Not
``ray_serve_actual_batch_size``: its mean came out below 1 (0.5-0.9) in runs where every batch held at
least one request, so it is not what its name says here."""
STATS_SETTLE_S = 2.5
"""Wait before reading the metrics: Ray exports them every second (``ray_app.METRICS_INTERVAL_MS``)."""


class RayServe(stack.ServedStack):
    """ONNX Runtime in a Ray Serve deployment, requests batched by ``@serve.batch``."""

    name: ClassVar[str] = "onnxruntime@ray-serve"
    server: ClassVar[str] = "ray-serve"
    install: ClassVar[str] = "accelbench[onnxruntime,serve]"
    modules: ClassVar[tuple[str, ...]] = ("onnxruntime", "ray.serve", "starlette", "aiohttp")
    distributions: ClassVar[tuple[str, ...]] = ("onnxruntime", "ray", "aiohttp")
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "ONNX (from PyTorch), served by Ray Serve (HTTP, v2 protocol)",
        "compiler": "ONNX Runtime graph optimizer",
        "platform": "CPU EP (MLAS)",
    }

    def start_server(self, files: Mapping[int, Path], spec: ModelSpec, ctx: CellContext) -> stack.Served:
        """Write the app's config and start it; ready when the model's ``/ready`` route answers."""
        http_port, metrics_port = process.free_port(), process.free_port()
        temp_dir = tempfile.mkdtemp(prefix="abray-", dir="/tmp")
        bind_host, host = proxy_hosts(ctx.serve_cluster)
        config = stack.server_config(
            files,
            ctx,
            max_batch=max(files) // min(files),
            http_port=http_port,
            metrics_port=metrics_port,
            temp_dir=temp_dir,
            address=ctx.serve_cluster or "local",
            http_host=bind_host,
        )
        config_path = stack.write_config(ctx, "ray", config)
        url = f"http://{host}:{http_port}"
        server = process.start(
            self.server,
            [sys.executable, "-m", "accelbench.serving.ray_app", str(config_path)],
            (http_port, metrics_port),
            config_path.with_suffix(".log"),
            lambda: metrics.http_ok(f"{url}/v2/models/{stack.MODEL_NAME}/ready"),
            stack.START_TIMEOUT_S,
            env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
            after_stop=lambda: shutil.rmtree(temp_dir, ignore_errors=True),
        )
        if ctx.serve_cluster:  # the cluster's metrics cover every job on it
            return stack.Served(url, server, lambda: {"ray_cluster": str(ctx.serve_cluster)})
        metrics_url = f"http://{process.HOST}:{metrics_port}/metrics"
        return stack.Served(
            url, server, lambda: ray_stats(metrics.http_text(metrics_url, settle_s=STATS_SETTLE_S))
        )


class RayServeNoBatch(RayServe):
    """The same deployment with batching off: one request per ONNX Runtime call."""

    name: ClassVar[str] = "onnxruntime@ray-serve-nobatch"
    server: ClassVar[str] = "ray-serve-nobatch"
    batching: ClassVar[bool] = False


def proxy_hosts(address: str | None) -> tuple[str, str]:
    """(where Serve's proxy listens, where the client reaches it): 127.0.0.1 for a Ray of the cell's
    own or a cluster on this machine (``auto`` or a loopback head); else every interface of the head,
    reached at the address's host."""
    host = (address or "").rpartition(":")[0]
    if address in (None, "auto") or host in ("127.0.0.1", "localhost"):
        return process.HOST, process.HOST
    return "0.0.0.0", host


def ray_stats(text: str) -> dict[str, str]:
    """The detail entries of Serve's histograms found in the Prometheus ``text``."""
    found: dict[str, str] = {}
    for metric, (mean, count) in metrics.histogram_means(text, tuple(STATS)).items():
        unit = "_ms" if metric.endswith("_ms") else ""
        found[f"{STATS[metric]}{unit}_mean"] = f"{mean:.6g}"
        found[f"{STATS[metric]}_count"] = f"{count:.0f}"
    return found
