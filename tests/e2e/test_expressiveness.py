"""The expressiveness matrix: verdicts from statuses (pure), and the suite through the CLI (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accelbench.cell.loadgen_body import LoadgenBody
from accelbench.head import Head, Quality
from accelbench.loadgen_figures import LoadgenVerdict
from accelbench.normalize.expressiveness import VERDICTS, expressiveness_matrix
from accelbench.results import Cell, Result
from tests.e2e.test_cli import accelbench


def result(workload: str, stack: str, status: str, qps: float | None = None, reason: str = "") -> Result:
    loadgen = LoadgenVerdict("single-stream", True, (), qps, 10, "quick", False, "x") if qps else None
    quality = (
        Quality("cosine", 0.5, 0.9999, False, 16, "min cosine 0.5") if status == "quality_failed" else None
    )
    cell = Cell(workload, stack, "single-stream", "cpu", "tiny")
    return Result(
        "r", cell, Head(status, reason, quality=quality), LoadgenBody(loadgen=loadgen), driver="loadgen"
    )


def test_verdicts_and_speed_come_from_status_and_eager_throughput() -> None:
    results = [
        result("moe-topk", "torch-eager", "ok", 100.0),
        result("moe-topk", "onnxruntime", "ok", 250.0),
        result("moe-topk", "tvm", "ok", 40.0),
        result("moe-topk", "openvino-bf16", "quality_failed", 300.0, "quality gate failed: cosine"),
        result("moe-topk", "jax-xla", "unsupported", reason="jax-xla: no lowering for aten.nonzero"),
        result("ssm-scan", "onnxruntime", "ok", 10.0),  # no eager result: no ratio
        result("ssm-scan", "iree", "timeout", reason="no result after 300 s"),
        result("resnet50", "torch-eager", "ok", 5.0),  # not an expressiveness workload
    ]
    matrix = expressiveness_matrix(results)
    document = matrix.to_dict()
    assert set(document) == {"workloads", "stacks", "cells"}
    assert document["workloads"] == ["moe-topk", "ssm-scan"]
    assert document["stacks"] == ["torch-eager", "onnxruntime", "tvm", "openvino-bf16", "jax-xla", "iree"]
    cells = {(c["workload"], c["stack"]): c for c in document["cells"]}
    assert len(cells) == 7 and all(
        set(c) == {*["workload", "stack", "device", "scenario"], "verdict", "reason", "speed_vs_eager"}
        for c in cells.values()
    )
    verdict = {key: (c["verdict"], c["speed_vs_eager"]) for key, c in cells.items()}
    assert verdict[("moe-topk", "torch-eager")] == ("runs", 1.0)
    assert verdict[("moe-topk", "onnxruntime")] == ("runs", 2.5)
    assert verdict[("moe-topk", "tvm")] == ("slower-than-eager", 0.4)
    assert verdict[("moe-topk", "openvino-bf16")] == ("wrong", None)
    assert "min cosine 0.5" in cells[("moe-topk", "openvino-bf16")]["reason"]
    assert verdict[("moe-topk", "jax-xla")] == ("unsupported", None)
    assert "aten.nonzero" in cells[("moe-topk", "jax-xla")]["reason"]
    assert verdict[("ssm-scan", "onnxruntime")] == ("runs", None)
    assert verdict[("ssm-scan", "iree")] == ("timeout", None)
    assert {c["verdict"] for c in document["cells"]} <= set(VERDICTS)
    assert {c.verdict for c in matrix.cells} == {c["verdict"] for c in document["cells"]}


@pytest.mark.slow
def test_the_suite_through_the_cli_gives_a_matrix(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    args = ("--suite", "expressiveness", "--workloads", "dlrm-bags,dynamic-seq", "--no-probe")
    done = accelbench("run", *args, "--stacks", "torch-eager,onnxruntime", "--json", "--store", store)
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(done.stdout)["expressiveness"]
    assert document["workloads"] == ["dlrm-bags", "dynamic-seq"]
    assert document["stacks"] == ["torch-eager", "onnxruntime"]
    cells = {(c["workload"], c["stack"]): c for c in document["cells"]}
    assert cells[("dlrm-bags", "torch-eager")]["verdict"] == "runs"
    assert cells[("dynamic-seq", "torch-eager")]["verdict"] == "runs"
    assert cells[("dlrm-bags", "onnxruntime")]["verdict"] in ("runs", "slower-than-eager")
    # exported for the first sample's length, onnxruntime cannot take the next sample's
    shape_failure = cells[("dynamic-seq", "onnxruntime")]
    assert shape_failure["verdict"] in ("crashed", "unsupported") and shape_failure["reason"]
    shown = accelbench("show", "--store", store)
    assert shown.returncode == 0 and "Expressiveness" in shown.stdout and "dynamic-seq" in shown.stdout
