"""LLM decode, single-stream, per generating stack: LoadGen's TTFT p90, TPOT p90, tokens/s, agreement.

Each stack runs in its own fresh process (frameworks keep global state, LoadGen segfaults on a broken
SUT): it prepares the model (conversion timed apart), warms up on one prompt, then runs LoadGen's
single-stream scenario in token mode (64 queries drawn from the seeded prompt set, 1 thread). The
replies LoadGen's queries got are judged against torch-eager fp32's (run first): identical-token share,
replies identical, TEST06. Stacks run one after another, not interleaved: compare them knowing the
machine may drift between them. Usage: ``python benchmarks/llm_decode.py [--model smollm2-135m]
[--stacks torch-eager,ort-genai,...] [--prompts 16] [--queries 64] [--cache DIR] [--json FILE]``;
``--audit`` runs the prefix-cache audit instead (the two longest prompts, first token only).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DEFAULT_CACHE = Path.home() / ".cache" / "accelbench"


def measure_one(args: argparse.Namespace, stack_name: str, work: Path) -> dict[str, Any]:
    """Prepare one stack, run LoadGen single-stream, judge its replies (runs in the child process)."""
    from accelbench.generation.base import GenerationContext, Reply
    from accelbench.generation.loadgen_tokens import TokenRun, measure_tokens, timed_prompts
    from accelbench.generation.models import load_model
    from accelbench.generation.prompts import make_prompts
    from accelbench.generation.quality import agreement, check_test06, check_test09
    from accelbench.generation.reference import REFERENCE
    from accelbench.registry import named

    stack = named("generating stack", stack_name)
    reason = stack.unavailable_reason("cpu")
    if reason:
        return {"stack": stack_name, "status": f"unavailable: {reason}"}
    model = load_model(args.model, args.cache)
    prompts = make_prompts(model, args.prompts, seed=0)
    start = time.perf_counter()
    generator = stack.prepare(model, GenerationContext(args.cache, threads=args.threads))
    prepare_s = time.perf_counter() - start
    ref = _reference(generator, prompts, work / "reference.json", write=stack_name == REFERENCE)
    refs_all = [Reply(tuple(ref["replies"][str(i)]), 0.0, 0.0, 0) for i in range(len(prompts.prompts))]
    keep = timed_prompts(refs_all)
    timed = [prompts.prompts[i] for i in keep]
    warm = generator.generate(timed[0], prompts.max_new_tokens)
    run = TokenRun(
        "single-stream", min_duration_s=1.0, min_queries=args.queries, expected_latency_s=warm.latency_s
    )
    figures = measure_tokens(generator, timed, prompts.max_new_tokens, run, work / stack_name)
    by_prompt = {keep[i]: r for i, r in zip(figures.prompt_indices, figures.replies, strict=True)}
    keys = sorted(by_prompt)
    references, replies = [refs_all[i] for i in keys], [by_prompt[i] for i in keys]
    result = agreement(references, replies, generator.precision, [ref["margins"][i] for i in keys])
    length = check_test09(references, replies)
    return {
        "stack": stack_name,
        "test09_ratio": length.value,
        "test09_passed": length.passed,
        "status": "ok" if figures.valid else "INVALID: " + "; ".join(figures.invalid_reasons),
        "precision": generator.precision,
        "weight_format": generator.weight_format,
        "conversion_s": generator.conversion_s,
        "prepare_s": prepare_s,
        "ttft_p90_s": figures.ttft_percentiles_s.get(90.0),
        "tpot_p90_s": figures.tpot_percentiles_s.get(90.0),
        "ttft_mean_s": figures.ttft_mean_s,
        "tpot_mean_s": figures.tpot_mean_s,
        "tokens_per_s": figures.tokens_per_s,
        "queries": figures.queries,
        "timed_prompts": f"{len(keep)}/{len(prompts.prompts)}",
        "test06": check_test06(figures.replies, prompts.max_new_tokens, model.eos_token_id).detail,
        "agreement": result.identical_share,
        "identical_replies": f"{result.identical_replies}/{len(keys)}",
        "first_divergence": list(result.first_divergence),
        "quality_passed": result.passed,
        "quality_detail": result.detail,
        "input_tokens": [prompts.input_tokens[i] for i in keep],
        "load_average": os.getloadavg()[0],
    }


def _reference(generator: Any, prompts: Any, path: Path, write: bool) -> dict[str, Any]:
    """The fp32 reference replies and margins: generated and written by the reference stack (which runs
    first), read back by the others."""
    from accelbench.generation.quality import reference_margins

    if write:
        every = [generator.generate(p, prompts.max_new_tokens) for p in prompts.prompts]
        margins = reference_margins(generator.model, prompts.prompts, every)
        replies = {str(i): list(r.tokens) for i, r in enumerate(every)}
        path.write_text(json.dumps({"replies": replies, "margins": margins}))
    reference: dict[str, Any] = json.loads(path.read_text())
    return reference


def audit_one(args: argparse.Namespace, stack_name: str) -> dict[str, Any]:
    """The prefix-cache audit of one stack on the two longest prompts, first token only."""
    from accelbench.generation.base import GenerationContext
    from accelbench.generation.models import load_model
    from accelbench.generation.prompts import make_prompts
    from accelbench.generation.quality import prefix_cache_audit
    from accelbench.registry import named

    stack = named("generating stack", stack_name)
    reason = stack.unavailable_reason("cpu")
    if reason:
        return {"stack": stack_name, "status": f"unavailable: {reason}"}
    model = load_model(args.model, args.cache)
    prompts = sorted(make_prompts(model, args.prompts, seed=0).prompts, key=len)
    generator = stack.prepare(model, GenerationContext(args.cache, threads=args.threads))
    check = prefix_cache_audit(generator, prompts[-1], max_new_tokens=1)
    return {"stack": stack_name, "status": "ok" if check.passed else "FAILED", "detail": check.detail}


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table (ms for latencies)."""
    columns = ("stack", "precision / weights", "conversion s", "TTFT p90 ms", "TPOT p90 ms", "tokens/s")
    head = "| " + " | ".join((*columns, "agreement", "status")) + " |"
    lines = [head, "|" + "---|" * 8]
    for r in rows:
        if "precision" not in r:
            lines.append(f"| {r['stack']} | - | - | - | - | - | - | {r['status']} |")
            continue
        ms = lambda v: f"{v * 1e3:.1f}" if v is not None else "-"  # noqa: E731
        agree = f"{r['agreement']:.2f} ({r['identical_replies']} identical)" if "agreement" in r else "-"
        if "quality_passed" in r and not r["quality_passed"]:
            agree += " FAIL"
        if "test09_ratio" in r:
            agree += f"; length x{r['test09_ratio']:.2f}" + ("" if r["test09_passed"] else " TEST09 FAIL")
        cells = [r["stack"], f"{r['precision']} / {r['weight_format']}", f"{r['conversion_s']:.1f}"]
        cells += [
            ms(r["ttft_p90_s"]),
            ms(r["tpot_p90_s"]),
            f"{r['tokens_per_s'] or 0:.1f}",
            agree,
            r["status"],
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    from accelbench.generation.reference import REFERENCE
    from accelbench.registry import GENERATING_STACKS as STACKS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--stacks", default=",".join(STACKS))
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--queries", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--audit", action="store_true", help="run the prefix-cache audit instead")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        from accelbench.errors import CellError

        try:
            row = audit_one(args, args.one) if args.audit else measure_one(args, args.one, args.work)
        except CellError as error:  # Unavailable / Unsupported, with the reason
            row = {"stack": args.one, "status": f"{error.status}: {error}"}
        print("ROW " + json.dumps(row), flush=True)
        return
    names = [n for n in args.stacks.split(",") if n]
    names = [REFERENCE] + [n for n in names if n != REFERENCE]  # the reference first: it writes the replies
    if args.audit:
        for name in names:
            row = _child(args, name, Path(tempfile.gettempdir()))
            print(f"{row['stack']}: {row['status']} {row.get('detail', '')}", flush=True)
        return
    rows = []
    with tempfile.TemporaryDirectory(prefix="llm-decode-") as work:
        for name in names:
            rows.append(_child(args, name, Path(work)))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    print(
        f"\n{args.model}, single-stream, {args.queries} queries, {args.threads} thread(s), "
        f"load average {os.getloadavg()[0]:.1f}\n"
    )
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


def _child(args: argparse.Namespace, name: str, work: Path) -> dict[str, Any]:
    command = [
        sys.executable,
        __file__,
        "--one",
        name,
        "--work",
        str(work),
        "--model",
        args.model,
        "--prompts",
        str(args.prompts),
        "--queries",
        str(args.queries),
        "--threads",
        str(args.threads),
        "--cache",
        str(args.cache),
        *(["--audit"] if args.audit else []),
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    for line in done.stdout.splitlines():
        if line.startswith("ROW "):
            row: dict[str, Any] = json.loads(line[4:])
            return row
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"stack": name, "status": f"crashed (rc {done.returncode}): {tail}"}


if __name__ == "__main__":
    main()
