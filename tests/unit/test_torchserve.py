"""TorchServe's pieces that need no server: readiness, its Prometheus counters, its config, Java's absence."""

from __future__ import annotations

import importlib.util
import json

import pytest

from accelbench.serving import torchserve
from accelbench.serving.torchserve import JAVA_HINT, TorchServe, torchserve_stats, worker_ready
from accelbench.serving.torchserve_app import properties

METRICS = """# HELP ts_inference_requests_total Total number of inference requests.
# TYPE ts_inference_requests_total counter
ts_inference_requests_total{model_name="model",model_version="default",hostname="h"} 40.0
# TYPE ts_queue_latency_microseconds counter
ts_queue_latency_microseconds{model_name="model",model_version="default",hostname="h"} 80000.0
ts_inference_latency_microseconds{model_name="model",model_version="default",hostname="h"} 400000.0
"""


def test_ready_needs_a_ready_worker_not_a_healthy_ping() -> None:
    described = [{"modelName": "model", "workers": [{"id": "9000", "status": "UNLOADING"}]}]
    assert worker_ready(json.dumps(described)) is False
    described[0]["workers"].append({"id": "9001", "status": "READY"})
    assert worker_ready(json.dumps(described)) is True
    assert worker_ready("[]") is False


def test_stats_are_milliseconds_per_request_from_the_cumulative_counters() -> None:
    assert torchserve_stats(METRICS) == {
        "server_requests": "40",
        "server_queue_ms_mean": "2",
        "server_inference_ms_mean": "10",
    }
    assert torchserve_stats("") == {"server_requests": "0"}


def test_properties_bind_loopback_batch_and_turn_token_auth_off() -> None:
    config = {"model": "model", "max_batch": 2, "batch_wait_s": 0.002, "http_port": 1, "management_port": 2,
              "metrics_port": 3}  # fmt: skip
    text = properties(config)
    assert "inference_address=http://127.0.0.1:1\n" in text and "metrics_address=http://127.0.0.1:3\n" in text
    assert "disable_token_authorization=true" in text and "disable_system_metrics=true" in text
    models = json.loads(text.split("models=", 1)[1])
    assert models["model"]["1.0"]["batchSize"] == 2 and models["model"]["1.0"]["maxBatchDelay"] == 2


def test_without_java_the_stack_is_unavailable_with_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    packages = all(importlib.util.find_spec(name) for name in ("ts", "model_archiver", "onnxruntime", "yaml"))
    monkeypatch.setattr(torchserve.shutil, "which", lambda name: None)
    reason = TorchServe().unavailable_reason("cpu")
    assert reason == JAVA_HINT if packages else reason and "\n" not in reason
