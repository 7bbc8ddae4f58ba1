"""The PyTriton server script: Triton Inference Server (from the ``nvidia-pytriton`` wheel) with one
Python-backend model that runs ONNX Runtime; Triton speaks the v2 protocol itself.

Run by ``accelbench.serving.triton`` with the PyTriton venv's python, as a file (that venv has no
accelbench: numpy<2): ``python triton_app.py CONFIG.json``; it imports ``ort_models`` and ``sessions``
beside it. Every listener binds 127.0.0.1; the statistics endpoint wants the access token of the
config (``triton-access-token`` header). ``max_batch`` rows per execution: Triton's dynamic batcher
joins waiting requests (``batch_wait_s``) up to it and ``ort_models`` pads them to the exported size;
when ``max_batch`` is one request's rows (batching off) each request runs alone. SIGTERM, or the
owner going away, runs ``triton.stop()``.

CONFIG keys: ``models``, ``model``, ``threads``, ``inputs`` ([name, dtype, per-row shape]),
``max_batch``, ``batch_wait_s``, ``http_port``, ``grpc_port``, ``metrics_port``,
``workspace``, ``token``, ``owner_pid``.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np
from ort_models import OrtModels
from sessions import watch_owner

HOST = "127.0.0.1"


def bind(triton: Any, config: dict[str, Any]) -> None:
    """Bind the ONNX model to ``triton`` under ``config['model']``."""
    from pytriton.decorators import batch
    from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor

    models = OrtModels(config["models"], int(config["threads"]))
    names = [name for name, _, _ in config["inputs"]]

    @batch
    def infer(**tensors: np.ndarray) -> dict[str, np.ndarray]:
        return {"output": models.infer([{name: tensors[name] for name in names}])[0]}

    delay_us = int(float(config["batch_wait_s"]) * 1e6)
    inputs = [Tensor(name=n, dtype=np.dtype(d), shape=tuple(s)) for n, d, s in config["inputs"]]
    output = Tensor(name="output", dtype=models.output_dtype, shape=models.output_row_shape)
    batcher = DynamicBatcher(max_queue_delay_microseconds=delay_us)
    triton.bind(
        model_name=config["model"],
        infer_func=infer,
        inputs=inputs,
        outputs=[output],
        config=ModelConfig(max_batch_size=int(config["max_batch"]), batcher=batcher),
        strict=False,
    )


def serve_forever(config: dict[str, Any]) -> None:
    """Start Triton with the model, then wait for SIGTERM or the owner's end."""
    from pytriton.triton import Triton, TritonConfig, TritonSecurityConfig

    triton_config = TritonConfig(
        http_address=HOST,
        http_port=int(config["http_port"]),
        grpc_address=HOST,
        grpc_port=int(config["grpc_port"]),
        metrics_address=HOST,
        metrics_port=int(config["metrics_port"]),
        allow_gpu_metrics=False,
        exit_timeout_secs=5,
    )
    security = TritonSecurityConfig(access_token=config["token"])
    triton = Triton(config=triton_config, security_config=security, workspace=config["workspace"])
    watch_owner(int(config["owner_pid"]), triton.stop, remove=[str(Path(config["workspace"]).parent)])
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    try:
        bind(triton, config)
        triton.run()
        print("accelbench: triton ready", flush=True)
        while True:  # SIGTERM raises SystemExit here
            time.sleep(1.0)
    finally:
        triton.stop()


if __name__ == "__main__":
    serve_forever(json.loads(Path(sys.argv[1]).read_text()))
