"""Per-sample errors of honest reduced-precision stacks against the fp32 eager reference.

The quality gate judges every checked sample against the budget of the precision a stack declares
(``accelbench.meters.quality.sample_budget``). This script measures what honest reduced-precision
execution reaches, per sample, so the int8 budget sits between them and a wrong answer: for each
workload it prints the largest and the median normalised error max|out - ref| / max|ref| over
``--samples`` inputs of

* ``ort-int8-dynamic``: onnxruntime on the model's ONNX export quantized with
  ``onnxruntime.quantization.quantize_dynamic`` (int8 weights, int8 activations per call);
* ``torch-int8-dynamic``: ``torch.ao.quantization.quantize_dynamic`` (its Linear layers in int8);
* ``bf16-autocast`` / ``fp16-autocast``: eager torch under CPU autocast to bf16 / fp16;
* ``garbage``: a random answer of the reference's scale (the planted cheat), for the margin.

Usage: ``python benchmarks/reduced_precision_errors.py [--size tiny] [--workloads a,b] [--samples 64]``.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

Infer = Callable[[tuple[np.ndarray, ...]], np.ndarray]


def ort_int8(model: Any, spec: Any, work: Path) -> Infer:
    """onnxruntime on a dynamically int8-quantized ONNX export of ``model``."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from accelbench.stacks.onnx_export import export_onnx

    path, _ = export_onnx(model, spec, work)
    quantized = work / "int8.onnx"
    quantize_dynamic(str(path), str(quantized), weight_type=QuantType.QInt8)
    session = ort.InferenceSession(str(quantized), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return lambda x: np.asarray(session.run(None, dict(zip(names, x, strict=True)))[0])


def torch_int8(model: Any, spec: Any, work: Path) -> Infer:
    """Eager torch with its Linear layers dynamically quantized to int8."""
    import torch

    quantized = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    return lambda x: _eager(quantized, x)


def bf16(model: Any, spec: Any, work: Path) -> Infer:
    """Eager torch under CPU autocast to bf16."""
    import torch

    def run(x: tuple[np.ndarray, ...]) -> np.ndarray:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return _eager(model, x)

    return run


def _eager(model: Any, inputs: tuple[np.ndarray, ...]) -> np.ndarray:
    import torch

    with torch.inference_mode():
        return np.asarray(model(*(torch.from_numpy(a) for a in inputs)).float().numpy())


def fp16(model: Any, spec: Any, work: Path) -> Infer:
    """Eager torch under CPU autocast to fp16."""
    import torch

    def run(x: tuple[np.ndarray, ...]) -> np.ndarray:
        with torch.autocast("cpu", dtype=torch.float16):
            return _eager(model, x)

    return run


MAKERS = {
    "ort-int8-dynamic": ort_int8,
    "torch-int8-dynamic": torch_int8,
    "bf16-autocast": bf16,
    "fp16-autocast": fp16,
}
PRECISIONS = {"ort-int8-dynamic": "int8", "torch-int8-dynamic": "int8", "bf16-autocast": "bf16"}
"""The precision each maker declares (garbage: int8, the loosest budget)."""


def per_sample_errors(refs: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    """The relative L2 error ||out - ref|| / ||ref|| per sample."""
    return np.array([np.linalg.norm(o - r) / np.linalg.norm(r) for r, o in zip(refs, outs, strict=True)])


def garbage(refs: list[np.ndarray], seed: int = 0) -> list[np.ndarray]:
    """Random answers of each reference's shape and spread (the planted cheat's garbage)."""
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(r.shape) * r.std() + r.mean()).astype(np.float32) for r in refs]


def measure(workload_name: str, size: str, samples: int) -> None:
    """Print each maker's largest and median per-sample error on ``workload_name``."""
    import torch

    from accelbench import registry
    from accelbench.meters.quality import compare, sample_budget
    from accelbench.stacks.base import ModelSpec

    workload = registry.instantiate(registry.table("workload")[workload_name])
    model = workload.build_model(size, 0).eval()
    inputs = [workload.make_sample(size, 0, i) for i in range(samples)]
    refs = [_eager(model, x) for x in inputs]
    spec = ModelSpec(workload_name, size, 0, "canonical", workload.input_names(), inputs[0])
    work = Path(tempfile.mkdtemp(prefix="reduced-precision-"))
    torch.set_num_threads(2)
    rows = {name: [make(model, spec, work)(x) for x in inputs] for name, make in MAKERS.items()}
    rows["garbage"] = garbage(refs)
    for name, outs in rows.items():
        errors = per_sample_errors(refs, outs)
        precision = PRECISIONS.get(name, "fp16" if name.startswith("fp16") else "int8")
        budget = sample_budget(precision, workload_name, size)
        judged = compare(workload.quality_metric, refs, outs, precision, budget)
        print(
            f"{workload_name:10s} {size:8s} {name:20s} rel-L2 min {errors.min():.3g} "
            f"median {np.median(errors):.3g} max {errors.max():.3g}"
            f" p99 {np.quantile(errors, 0.99):.3g}"
            f"  gate({precision}) {'pass' if judged.passed else 'FAIL'}: {judged.detail}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="tiny")
    parser.add_argument("--workloads", default="resnet50,bert-base,minilm-l6")
    parser.add_argument("--samples", type=int, default=64)
    args = parser.parse_args()
    for name in args.workloads.split(","):
        measure(name, args.size, args.samples)


if __name__ == "__main__":
    main()
