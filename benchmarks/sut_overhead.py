"""What the SUT process costs: each model's call in the harness's process against the same call across
the wire to a SUT process, interleaved.

For every (workload, stack, batch) asked, one session is prepared both ways from the same prepare
request a cell sends (``accelbench.cell.trial``): in this process (``accelbench.sut.inprocess``, as
before the boundary existed) and in a SUT process (``accelbench.sut.remote``). Then the same example
batch is run ``--calls`` times, alternating A B A B after a warm-up, and the table gives each side's
median seconds per call, the difference (the boundary's cost per call: two copies of the inputs and
the output, a socket round trip, two process wake-ups) and its share of the in-process median. The null
stack is the harness floor: its call is the boundary's cost alone.

With ``--llm MODEL`` it times generating stacks instead (``--llm-stacks torch-eager``): the same prompts
answered in this process (``in_process_generator``) and by the stack in a SUT process
(``accelbench.sut.generation_remote``), one reply each way in turn, and the table gives each side's
median time to first token and time per output token (the boundary's cost per token), and the median
round trip of the wire before the stack had the prompt (``Reply.wire_s``).

Usage: ``python benchmarks/sut_overhead.py [--size standard] [--workloads resnet50,bert-base,minilm-l6]
[--stacks null,torch-eager,onnxruntime] [--calls 200]``, or
``python benchmarks/sut_overhead.py --llm smollm2-135m [--llm-stacks torch-eager] [--calls 60]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from accelbench import registry, variants
from accelbench.cell import pipeline, trial
from accelbench.cellspec import PlannedCell
from accelbench.config import RunConfig
from accelbench.results import Cell
from accelbench.scenarios import batching
from accelbench.sut.inprocess import InProcessSut, in_process_generator
from accelbench.sut.remote import SutProcess

LLM_CACHE = Path.home() / ".cache" / "accelbench"
"""Where the language models are built (as ``benchmarks/llm_decode.py``)."""


def _spec(workload: str, stack: str, size: str, folder: Path) -> Any:
    config = RunConfig("bench", (workload,), (stack,), ("offline",), size, "quick", input_seed=1)
    planned = PlannedCell(
        Cell(workload, stack, "offline", "cpu", size),
        registry.table("workload")[workload],
        registry.table("stack")[stack],
        registry.DRIVERS["loadgen"],
    )
    return pipeline.cell_spec("bench", config, planned, folder)


def _timed(infer: Any, example: Any) -> float:
    start = time.perf_counter()
    infer(example)
    return time.perf_counter() - start


def measure(workload: str, stack: str, size: str, batch: int, calls: int) -> dict[str, float]:
    """Median seconds per call in process and across the wire, interleaved."""
    with tempfile.TemporaryDirectory() as tmp:
        spec = _spec(workload, stack, size, Path(tmp))
        model = registry.instantiate(spec.refs.workload)
        example = batching.join([variants.make_sample(model, size, 7, k, None) for k in range(batch)], batch)
        request = trial._prepare_request(spec, model, batch)
        remote = SutProcess(spec.refs.stack, Path(tmp) / "sut", trial.sut_environment())
        local = InProcessSut(spec.refs.stack)
        try:
            sessions = [sut.prepare(request, example)[0].infer for sut in (local, remote)]
            for infer in sessions:
                for _ in range(max(3, calls // 20)):
                    infer(example)
            times: list[list[float]] = [[], []]
            for _ in range(calls):
                for side, infer in enumerate(sessions):
                    times[side].append(_timed(infer, example))
        finally:
            remote.stop()
    here, there = (statistics.median(t) for t in times)
    return {"in_process_s": here, "sut_process_s": there}


def measure_generation(model_name: str, stack: str, calls: int, threads: int) -> dict[str, float]:
    """Median TTFT, TPOT and wire round trip of replies in process and from a SUT process, interleaved."""
    from accelbench.generation import models, prompts
    from accelbench.generation.base import GenerationContext
    from accelbench.sut import generation_remote

    workload = registry.instantiate(registry.WORKLOADS[model_name])
    model = models.load_model(workload.model, LLM_CACHE)
    made = prompts.make_prompts(model, workload.prompts, seed=0)
    ctx = GenerationContext(LLM_CACHE / "llm-stacks", threads=threads)
    ref = registry.GENERATING_STACKS[stack]
    with tempfile.TemporaryDirectory() as tmp:
        remote = SutProcess(ref, Path(tmp) / "sut", trial.sut_environment())
        try:
            sides = [in_process_generator(ref, model, ctx), generation_remote.prepare(remote, model, ctx)]
            for generator in sides:
                for prompt in made.prompts:  # a first call at a new prompt length builds its kernels
                    generator.generate(prompt, made.max_new_tokens)
            replies: list[list[Any]] = [[], []]
            for k in range(calls):
                for side, generator in enumerate(sides):
                    prompt = made.prompts[k % len(made.prompts)]
                    replies[side].append(generator.generate(prompt, made.max_new_tokens))
        finally:
            remote.stop()
    row = {}
    for side, name in enumerate(("in_process", "sut_process")):
        decoded = [r for r in replies[side] if len(r.tokens) > 1]
        row[f"{name}_ttft_s"] = statistics.median(r.first_token_s for r in replies[side])
        row[f"{name}_tpot_s"] = statistics.median(r.time_per_output_token_s for r in decoded)
        row[f"{name}_wire_s"] = statistics.median(r.wire_s for r in replies[side])
    return row


def _generation_table(model: str, stacks: str, calls: int, threads: int) -> None:
    columns = ("model", "stack", "TTFT in ms", "TTFT SUT ms", "TPOT in ms", "TPOT SUT ms", "per token us")
    print("  ".join((*columns, "share", "wire us")))
    for stack in stacks.split(","):
        row = measure_generation(model, stack, calls, threads)
        here, there = row["in_process_tpot_s"], row["sut_process_tpot_s"]
        cells = [model, stack, *(f"{row[k] * 1e3:.3f}" for k in _TIMES)]
        cells += [f"{(there - here) * 1e6:.1f}", f"{(there - here) / here:.1%}"]
        print("  ".join((*cells, f"{row['sut_process_wire_s'] * 1e6:.0f}")))
        sys.stdout.flush()


_TIMES = ("in_process_ttft_s", "sut_process_ttft_s", "in_process_tpot_s", "sut_process_tpot_s")


def main(argv: list[str]) -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="standard")
    parser.add_argument("--workloads", default="resnet50,bert-base,minilm-l6")
    parser.add_argument("--stacks", default="null,torch-eager,onnxruntime")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--llm", default="", help="a generative workload: time generating stacks instead")
    parser.add_argument("--llm-stacks", default="torch-eager")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    if args.llm:
        _generation_table(args.llm, args.llm_stacks, args.calls, args.threads)
        return
    columns = ("workload", "stack", "batch", "in process ms", "SUT process ms", "overhead us", "share")
    print("  ".join(columns))
    for workload in args.workloads.split(","):
        for stack in args.stacks.split(","):
            for batch in (int(b) for b in args.batches.split(",")):
                row = measure(workload, stack, args.size, batch, args.calls)
                here, there = row["in_process_s"], row["sut_process_s"]
                share = (there - here) / here if here > 1e-5 else float("nan")
                cells = (workload, stack, str(batch), f"{here * 1e3:.3f}", f"{there * 1e3:.3f}")
                print("  ".join((*cells, f"{(there - here) * 1e6:.1f}", f"{share:.1%}")))
                sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
