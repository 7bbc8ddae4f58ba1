"""The honest error of every stack against the fp32 eager reference, per workload and size.

The precision audit (``accelbench.audits.precision``) holds a stack to the error budget of the precision
it declares. This script measures what honest stacks actually reach, so the budgets sit between the
classes with a stated margin: for each (workload, size, stack), the stack is prepared in its own process
exactly as a cell would (same model, same seed, same threads) and the largest normalised error
max|out - ref| / max|ref| over ``--samples`` inputs is printed with the declared precision. Two
reference rows emulate lower precision on eager torch: ``bf16-autocast`` and ``fp16-autocast``.
Usage: ``python benchmarks/precision_budgets.py [--size standard] [--stacks a,b] [--workloads a,b]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

STACKS = (
    "torch-eager",
    "torch-inductor",
    "onnxruntime",
    "openvino",
    "openvino-bf16",
    "iree",
    "jax-xla",
    "tensorflow",
    "litert",
    "tvm",
)
EMULATED = ("bf16-autocast", "fp16-autocast")


def measure(workload_name: str, size: str, stack_name: str, samples: int, threads: int) -> dict[str, Any]:
    """Prepare the stack in this process and return its declared precision and largest error."""
    import numpy as np
    import torch

    from accelbench import registry
    from accelbench.audits.precision import max_normalised_error
    from accelbench.stacks.base import CellContext, ModelSpec

    torch.set_num_threads(threads)
    workload = registry.instantiate(registry.table("workload")[workload_name])
    model = workload.build_model(size, 0)
    inputs = [workload.make_sample(size, 0, i) for i in range(samples)]
    with torch.inference_mode():
        refs = [model(*(torch.from_numpy(a) for a in x)).float().numpy() for x in inputs]
    if stack_name in EMULATED:
        dtype = torch.bfloat16 if stack_name.startswith("bf16") else torch.float16
        with torch.inference_mode(), torch.autocast("cpu", dtype=dtype):
            outs = [model(*(torch.from_numpy(a) for a in x)).float().numpy() for x in inputs]
        declared = stack_name.split("-")[0]
    else:
        stack = registry.instantiate(registry.table("stack")[stack_name])
        reason = stack.unavailable_reason("cpu")
        if reason:
            return {"declared": "-", "error": None, "note": f"unavailable: {reason}"}
        work = Path(tempfile.mkdtemp(prefix="precision-"))
        spec = ModelSpec(workload_name, size, 0, "canonical", workload.input_names(), inputs[0])
        session = stack.prepare(model, spec, CellContext("cpu", threads, work, work))
        outs = [np.asarray(session.infer(x)) for x in inputs]
        declared = session.effective_precision
    return {"declared": declared, "error": max_normalised_error(refs, outs), "note": ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="standard")
    parser.add_argument("--workloads", default="resnet50,bert-base,minilm-l6")
    parser.add_argument("--stacks", default=",".join((*STACKS, *EMULATED)))
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--timeout-s", type=float, default=900.0)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        workload, stack = args.one.split("/")
        print(json.dumps(measure(workload, args.size, stack, args.samples, args.threads)))
        return
    print(f"{'workload':<11} {'stack':<15} {'declared':<9} {'max norm err':>13}  note")
    for workload in args.workloads.split(","):
        for stack in args.stacks.split(","):
            row = _child(workload, stack, args)
            error = "-" if row["error"] is None else f"{row['error']:.3g}"
            print(f"{workload:<11} {stack:<15} {row['declared']:<9} {error:>13}  {row['note']}", flush=True)


def _child(workload: str, stack: str, args: argparse.Namespace) -> dict[str, Any]:
    """One measurement in a fresh interpreter (stacks keep global state)."""
    command = [sys.executable, __file__, "--one", f"{workload}/{stack}", "--size", args.size]
    command += ["--samples", str(args.samples), "--threads", str(args.threads)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout_s)
    except subprocess.TimeoutExpired:
        return {"declared": "-", "error": None, "note": f"timeout after {args.timeout_s:g} s"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"declared": "-", "error": None, "note": f"failed: {last[:120]}"}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


if __name__ == "__main__":
    main()
