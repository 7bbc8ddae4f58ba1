"""Does accelbench measure what a careful person would? Median latency vs direct timing, same model.

For each workload, accelbench's single-stream median latency (torch-eager and onnxruntime cells) is
compared with ``torch.utils.benchmark`` on the same module and with ONNX Runtime timed directly on the
ONNX file accelbench exported, same sample, same thread count. Usage:
``python benchmarks/agreement.py [--size tiny|standard] [--workloads a,b]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from _cli import run_json

from accelbench import registry


def torch_benchmark_s(workload: Any, size: str, threads: int) -> float:
    """Median seconds per call from torch.utils.benchmark's blocked_autorange."""
    import torch
    import torch.utils.benchmark as tb

    model = workload.build_model(size, 0)
    inputs = tuple(torch.from_numpy(a) for a in workload.make_sample(size, 0, 0))
    torch.set_num_threads(threads)
    with torch.inference_mode():
        timer = tb.Timer(
            stmt="model(*inputs)", globals={"model": model, "inputs": inputs}, num_threads=threads
        )
        return float(timer.blocked_autorange(min_run_time=3.0).median)


def onnxruntime_s(onnx_path: Path, workload: Any, size: str, threads: int) -> float:
    """Median seconds per ``InferenceSession.run`` call over about 3 s."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
    feed = dict(zip(workload.input_names(), workload.make_sample(size, 0, 0), strict=True))
    for _ in range(5):
        session.run(None, feed)
    times, deadline = [], time.perf_counter() + 3.0
    while time.perf_counter() < deadline:
        start = time.perf_counter()
        session.run(None, feed)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    """Print the agreement table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", default="standard")
    parser.add_argument("--workloads", default="minilm-l6,bert-base,resnet50")
    args = parser.parse_args()
    print(f"{'workload':<10} {'stack':<12} {'accelbench p50 ms':>18} {'direct ms':>10} {'ratio':>6}  tool")
    with tempfile.TemporaryDirectory() as tmp:
        document = run_json(
            Path(tmp),
            "--workloads",
            args.workloads,
            "--size",
            args.size,
            "--stacks",
            "torch-eager,onnxruntime",
            "--scenarios",
            "single-stream",
            "--rules",
            "standard",
        )
        run_dir = Path(tmp) / "runs" / document["run_id"]
        for result in document["results"]:
            _print_row(result, run_dir, args.size)


def _print_row(result: dict[str, Any], run_dir: Path, size: str) -> None:
    cell, threads = result["cell"], result["settings"]["threads"]
    workload = registry.instantiate(registry.WORKLOADS[cell["workload"]])
    if cell["stack"] == "torch-eager":
        direct_s, tool = torch_benchmark_s(workload, size, threads), "torch.utils.benchmark"
    else:
        onnx_path = next((run_dir / "cache" / "onnx").glob(f"{cell['workload']}-*.onnx"))
        direct_s, tool = onnxruntime_s(onnx_path, workload, size, threads), "onnxruntime direct"
    ours_s = result["latency"]["p50_s"]
    print(
        f"{cell['workload']:<10} {cell['stack']:<12} {ours_s * 1e3:>18.3f} {direct_s * 1e3:>10.3f} "
        f"{ours_s / direct_s:>6.3f}  {tool}, {threads} threads"
    )


if __name__ == "__main__":
    main()
