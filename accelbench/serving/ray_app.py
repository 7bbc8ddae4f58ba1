"""The Ray Serve server script: a local Ray, one ONNX Runtime deployment speaking the v2 protocol.

Run as ``python -m accelbench.serving.ray_app CONFIG.json`` by ``accelbench.serving.ray_serve`` (in a
session of its own). The deployment answers ``POST /v2/models/<model>/infer`` (binary extension) and
``GET /v2/models/<model>/ready``. With ``max_batch > 1`` up to that many requests are batched by
``@serve.batch``: their rows are padded to the smallest exported size that holds them (the ONNX files
have static shapes: one per size, ``models`` maps rows -> path). SIGTERM, or the owner process
going away, runs ``serve.shutdown()`` and ``ray.shutdown()`` and exits.

CONFIG keys: ``models``, ``model``, ``threads``, ``max_batch``, ``batch_wait_s``, ``http_port``,
``metrics_port``, ``temp_dir``, ``owner_pid``, ``address`` (``local``, or a Ray cluster's address),
``http_host`` (where Serve's proxy listens; 127.0.0.1 by default).

On a cluster (``address`` not ``local``) the script joins it as a driver, refuses to start when Serve
already runs there (that Serve's HTTP port is not this server's), sends the ONNX files' bytes with the
deployment (the replicas may run on nodes without this disk), and at the stop shuts down the Serve it
started and leaves the cluster, which lives on.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from accelbench.serving import protocol
from accelbench.serving.ort_models import OrtModels
from accelbench.serving.sessions import watch_owner

log = logging.getLogger(__name__)

HOST = "127.0.0.1"

METRICS_INTERVAL_MS = 1000
"""How often Ray exports its metrics (default 10 s: the run's last seconds would be missing)."""


def deployment(config: dict[str, Any]) -> Any:
    """The bound Ray Serve application for ``config``."""
    from ray import serve
    from starlette.requests import Request
    from starlette.responses import Response

    max_batch = int(config["max_batch"])

    @serve.deployment(ray_actor_options={"num_cpus": 0}, max_ongoing_requests=256)
    class OnnxModel:
        def __init__(self, models: dict[str, str | bytes], threads: int) -> None:
            self.models = OrtModels(models, threads)

        @serve.batch(max_batch_size=max_batch, batch_wait_timeout_s=float(config["batch_wait_s"]))
        async def batched(self, rows: list[dict[str, np.ndarray]]) -> list[np.ndarray]:
            return self.models.infer(rows)

        async def __call__(self, request: Request) -> Response:
            if request.method == "GET":
                return Response(b"ready")
            body = await request.body()
            length = request.headers.get(protocol.HEADER_LENGTH)
            tensors = protocol.decode(body, int(length) if length else None, "inputs")
            output = await self.batched(tensors) if max_batch > 1 else self.models.infer([tensors])[0]
            reply, header = protocol.encode({"output": output}, "outputs")
            headers = {protocol.HEADER_LENGTH: str(header)}
            return Response(reply, headers=headers, media_type=protocol.CONTENT_TYPE)

    models: dict[str, str | bytes] = dict(config["models"])
    if _on_cluster(config):
        models = {rows: Path(path).read_bytes() for rows, path in config["models"].items()}
    return OnnxModel.bind(models, int(config["threads"]))  # type: ignore[attr-defined]


def _on_cluster(config: dict[str, Any]) -> bool:
    return config.get("address", "local") != "local"


def _init_ray(ray: Any, config: dict[str, Any]) -> None:
    """A local Ray of this server's own, or the cluster at ``address`` joined as a driver."""
    if _on_cluster(config):
        ray.init(address=config["address"], log_to_driver=False)
        if _serve_running(ray):
            ray.shutdown()
            raise SystemExit(f"Ray Serve already runs on the cluster {config['address']}: stop it first")
        return
    ray.init(
        address="local",
        num_cpus=os.cpu_count(),
        include_dashboard=False,
        log_to_driver=False,
        _node_ip_address=HOST,
        _temp_dir=config["temp_dir"],
        _metrics_export_port=int(config["metrics_port"]),
        _system_config={"metrics_report_interval_ms": METRICS_INTERVAL_MS},
    )


def _serve_running(ray: Any) -> bool:
    from ray.serve._private.constants import SERVE_CONTROLLER_NAME, SERVE_NAMESPACE

    try:
        ray.get_actor(SERVE_CONTROLLER_NAME, namespace=SERVE_NAMESPACE)
    except ValueError:
        return False
    return True


def serve_forever(config: dict[str, Any]) -> None:
    """Start Ray and the application, then wait for SIGTERM or the owner's end."""
    import ray
    from ray import serve

    stopping = threading.Event()

    def shutdown() -> None:
        if not stopping.is_set() and ray.is_initialized():  # serve.shutdown() would start a Ray
            stopping.set()
            serve.shutdown()
            ray.shutdown()

    watch_owner(int(config["owner_pid"]), shutdown, remove=[config["temp_dir"]])
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    _init_ray(ray, config)
    try:
        serve.start(http_options={"host": config.get("http_host", HOST), "port": int(config["http_port"])})
        route = f"/v2/models/{config['model']}"
        serve.run(deployment(config), name=config["model"], route_prefix=route)
        print("accelbench: ray serve ready", flush=True)
        while True:  # SIGTERM raises SystemExit here
            time.sleep(1.0)
    finally:
        shutdown()


def main(argv: list[str]) -> int:
    """Entry point: serve the model described by the JSON file ``argv[0]``."""
    logging.basicConfig(level=logging.WARNING)
    serve_forever(json.loads(Path(argv[0]).read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
