"""Interleaved agreement of accelbench's single-stream latency with each stack's own timer.

For each stack, one session is prepared the way a cell prepares it (the workload's model, the
registered stack's ``prepare``), then rounds alternate A B A B ...: A is accelbench's measurement
(``accelbench.scenarios.loadgen.measure`` under the ``quick`` rules), B is the stack's own timer on
the same model and the same samples, asked for as many calls as A just made. Alternating puts both
sides under the same load of a shared machine, so the ratio of a round is fair even where the absolute
figures drift. Own timers: torch-eager ``torch.utils.benchmark.Timer.blocked_autorange`` (median),
onnxruntime a plain ``InferenceSession.run`` loop on the ONNX file the stack exported (median of
``perf_counter`` per call, after warm-up), openvino the package's ``benchmark_app`` on that file
(``-hint latency -api sync -infer_precision f32``, its Median). Usage:
``python benchmarks/timer_agreement.py [--workload resnet50] [--size standard] [--rounds 7]
[--stacks torch-eager,onnxruntime,openvino] [--samples 16] [--threads N]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from accelbench import registry, variants
from accelbench.scenarios.loadgen import measure
from accelbench.scenarios.rules import get_rules
from accelbench.stacks.base import CellContext, ModelSpec, Session
from accelbench.stacks.onnx_export import onnx_path
from accelbench.workloads.base import Inputs, Workload

WARMUP_CALLS = 5
"""Calls of the own timer before it times anything (LoadGen's side warms up in its calibration)."""
BENCHMARK_APP_TIMEOUT_S = 300
_OV_TYPES = {"float32": "f32", "float16": "f16", "int64": "i64", "int32": "i32", "bool": "boolean"}
"""numpy dtype names -> benchmark_app's precision names (``-iop``)."""
_MEDIAN_LINE = re.compile(r"Median:\s+([0-9.]+)\s*(ms|us|s)\b")
_SECONDS_PER = {"ms": 1e-3, "us": 1e-6, "s": 1.0}


@dataclass(frozen=True, slots=True)
class Round:
    """One A-then-B pair: accelbench's two figures and the own timer's median, in seconds per call."""

    loadgen_p50_s: float
    sut_median_s: float
    own_median_s: float
    calls: int
    """Calls accelbench's SUT made in the round (the own timer was asked for as many)."""


@dataclass(frozen=True, slots=True)
class Agreement:
    """The rounds of one stack, or why it was not measured."""

    stack: str
    method: str
    rounds: tuple[Round, ...] = ()
    missing: str = ""


@dataclass(frozen=True, slots=True)
class Setup:
    """What every stack is measured with: workload, size, samples, threads, scratch folder."""

    workload: Workload
    size: str
    samples: tuple[Inputs, ...]
    threads: int
    scratch: Path


OwnTimer = Callable[[int, float], float]
"""``timer(calls, duration_s)``: median seconds per call over about ``calls`` calls / ``duration_s``."""


def torch_timer(stack: Any, model: Any, setup: Setup, ctx: CellContext) -> tuple[str, OwnTimer]:
    """``torch.utils.benchmark.Timer`` on the prepared module, cycling the samples."""
    import torch
    import torch.utils.benchmark as tb

    tensors = [tuple(torch.from_numpy(array) for array in sample) for sample in setup.samples]
    feed = itertools.cycle(tensors)
    timer = tb.Timer(
        stmt="model(*next(feed))", globals={"model": model, "feed": feed}, num_threads=setup.threads
    )

    def run(calls: int, duration_s: float) -> float:
        with torch.inference_mode():
            return float(timer.blocked_autorange(min_run_time=duration_s).median)

    return "torch.utils.benchmark blocked_autorange median", run


def ort_loop(stack: Any, model: Any, setup: Setup, ctx: CellContext) -> tuple[str, OwnTimer]:
    """A fresh ``InferenceSession`` on the ONNX file the stack exported, timed call by call."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = setup.threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    path = onnx_path(model_spec(setup), ctx.cache_dir)
    own = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    graph_inputs = {one.name for one in own.get_inputs()}
    names = setup.workload.input_names()
    feeds = [
        {name: array for name, array in zip(names, sample, strict=True) if name in graph_inputs}
        for sample in setup.samples
    ]

    def run(calls: int, duration_s: float) -> float:
        for feed in itertools.islice(itertools.cycle(feeds), WARMUP_CALLS):
            own.run(None, feed)
        times_s = []
        for feed in itertools.islice(itertools.cycle(feeds), calls):
            start = time.perf_counter()
            own.run(None, feed)
            times_s.append(time.perf_counter() - start)
        return statistics.median(times_s)

    return f"InferenceSession.run loop, perf_counter median after {WARMUP_CALLS} warm-up", run


def benchmark_app_path() -> str | None:
    """The ``benchmark_app`` beside this interpreter (the venv's), else on PATH, else None."""
    beside = Path(sys.executable).parent / "benchmark_app"
    return str(beside) if beside.exists() else shutil.which("benchmark_app")


def benchmark_app(stack: Any, model: Any, setup: Setup, ctx: CellContext) -> tuple[str, OwnTimer]:
    """OpenVINO's ``benchmark_app`` on the stack's ONNX file, fed the first sample as ``.npy``."""
    tool = benchmark_app_path()
    if tool is None:
        raise LookupError("not installed (no benchmark_app beside the interpreter or on PATH)")
    names = setup.workload.input_names()
    files, precisions = [], []
    for name, array in zip(names, setup.samples[0], strict=True):
        file = setup.scratch / f"{name}.npy"
        np.save(file, array)
        files.append(f"{name}:{file}")
        precisions.append(f"{name}:{_OV_TYPES[array.dtype.name]}")  # else an image input is taken as u8
    config = setup.scratch / "openvino_config.json"  # -nthreads is refused beside -hint latency
    config.write_text(
        json.dumps({"CPU": {k: str(v) for k, v in stack.compile_config(setup.threads).items()}})
    )
    command = [tool, "-m", str(onnx_path(model_spec(setup), ctx.cache_dir)), "-d", "CPU"]
    command += ["-hint", "latency", "-api", "sync", "-infer_precision", stack.precision_hint]
    command += ["-load_config", str(config), "-i", ",".join(files), "-iop", ",".join(precisions)]
    home = setup.scratch / "home"  # OpenVINO telemetry writes under $HOME
    home.mkdir(exist_ok=True)

    def run(calls: int, duration_s: float) -> float:
        done = subprocess.run(
            [*command, "-niter", str(calls)],
            capture_output=True,
            text=True,
            timeout=BENCHMARK_APP_TIMEOUT_S,
            env={**os.environ, "HOME": str(home)},
        )
        found = _MEDIAN_LINE.search(done.stdout)
        if done.returncode != 0 or found is None:
            raise RuntimeError(f"benchmark_app failed ({done.returncode}): {done.stdout[-800:]}")
        return float(found.group(1)) * _SECONDS_PER[found.group(2)]

    return "benchmark_app -hint latency -api sync, Median", run


OWN_TIMERS: dict[str, Callable[[Any, Any, Setup, CellContext], tuple[str, OwnTimer]]] = {
    "torch-eager": torch_timer,
    "onnxruntime": ort_loop,
    "openvino": benchmark_app,
}


def model_spec(setup: Setup) -> ModelSpec:
    """The ModelSpec of the canonical model at seed 0, batch 1 (as a cell builds it)."""
    return ModelSpec(
        workload=setup.workload.name,
        size=setup.size,
        seed=0,
        variant=variants.CANONICAL,
        input_names=setup.workload.input_names(),
        example=setup.samples[0],
    )


def agreement(stack_name: str, setup: Setup, rounds: int) -> Agreement:
    """Prepare the stack's session and its own timer, then run ``rounds`` interleaved rounds."""
    stack = registry.instantiate(registry.resolve("stack", (stack_name,))[stack_name])
    reason = stack.unavailable_reason("cpu")
    if reason:
        return Agreement(stack_name, "-", missing=f"stack unavailable: {reason}")
    model = variants.build_model(setup.workload, setup.size, 0, None)
    work = setup.scratch / stack_name
    ctx = CellContext(device="cpu", threads=setup.threads, work_dir=work, cache_dir=setup.scratch / "cache")
    session = stack.prepare(model, model_spec(setup), ctx)
    try:
        method, own = OWN_TIMERS[stack_name](stack, model, setup, ctx)
    except LookupError as err:
        return Agreement(stack_name, "-", missing=str(err))
    measured = []
    for number in range(rounds):
        measured.append(one_round(session, own, setup, work / f"r{number}"))
        last = measured[-1]
        print(
            f"{stack_name} round {number + 1}/{rounds}: lg p50 {last.loadgen_p50_s * 1e3:.3f} ms, "
            f"sut {last.sut_median_s * 1e3:.3f} ms, own {last.own_median_s * 1e3:.3f} ms",
            file=sys.stderr,
        )
    return Agreement(stack_name, method, tuple(measured))


def one_round(session: Session, own: OwnTimer, setup: Setup, log_dir: Path) -> Round:
    """A: accelbench's single-stream measurement; B: the own timer for as many calls."""
    measured = measure("single-stream", session.infer, list(setup.samples), get_rules("quick"), log_dir)
    latencies_s = measured.sut_latencies_s
    own_s = own(len(latencies_s), sum(latencies_s))
    return Round(
        loadgen_p50_s=measured.summary.latency_percentiles_s[50.0],
        sut_median_s=statistics.median(latencies_s),
        own_median_s=own_s,
        calls=len(latencies_s),
    )


def ratio_cell(ratios: Sequence[float]) -> str:
    """``median [min-max]`` of the per-round ratios."""
    return f"{statistics.median(ratios):.3f} [{min(ratios):.3f}-{max(ratios):.3f}]"


def table(results: Sequence[Agreement]) -> list[str]:
    """One line per stack: rounds, medians in ms, the two ratios with their spread, the own method."""
    header = (
        f"{'stack':<12} {'rounds':>6} {'calls':>5} {'own ms':>8} {'lg p50 ms':>9} {'sut ms':>8} "
        f"{'lg p50 / own [min-max]':>23} {'sut / own [min-max]':>23}  own timer"
    )
    lines = [header]
    for result in results:
        if result.missing:
            lines.append(f"{result.stack:<12} {result.missing}")
            continue
        rounds = result.rounds
        lines.append(
            f"{result.stack:<12} {len(rounds):>6} {statistics.median(r.calls for r in rounds):>5.0f} "
            f"{statistics.median(r.own_median_s for r in rounds) * 1e3:>8.3f} "
            f"{statistics.median(r.loadgen_p50_s for r in rounds) * 1e3:>9.3f} "
            f"{statistics.median(r.sut_median_s for r in rounds) * 1e3:>8.3f} "
            f"{ratio_cell([r.loadgen_p50_s / r.own_median_s for r in rounds]):>23} "
            f"{ratio_cell([r.sut_median_s / r.own_median_s for r in rounds]):>23}  {result.method}"
        )
    return lines


def main() -> None:
    """Measure every asked stack in turn and print the agreement table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="resnet50")
    parser.add_argument("--size", default="standard")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--stacks", default=",".join(OWN_TIMERS))
    parser.add_argument("--samples", type=int, default=16, help="distinct samples both sides cycle through")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args()
    stacks = [name for name in args.stacks.split(",") if name]
    unknown = [name for name in stacks if name not in OWN_TIMERS]
    if unknown:
        parser.error(f"no own timer for {', '.join(unknown)}; choose from {', '.join(OWN_TIMERS)}")
    workload = registry.instantiate(registry.resolve("workload", (args.workload,))[args.workload])
    import torch

    torch.set_num_threads(args.threads)
    samples = tuple(variants.make_sample(workload, args.size, 0, i, None) for i in range(args.samples))
    started_s, load_before = time.perf_counter(), os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        setup = Setup(workload, args.size, samples, args.threads, Path(tmp))
        results = [agreement(name, setup, args.rounds) for name in stacks]
    elapsed_s = time.perf_counter() - started_s
    print(
        f"{args.workload} {args.size}, {args.threads} threads, {args.samples} samples, rounds A B A B ... "
        f"(A: accelbench single-stream, quick rules; B: own timer), {elapsed_s:.0f} s, "
        f"1-min load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    print("\n".join(table(results)))


if __name__ == "__main__":
    main()
