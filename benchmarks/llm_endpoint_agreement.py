"""Does accelbench's served-LLM client measure what the peers measure? AIPerf and GuideLLM side by side.

Installs NVIDIA AIPerf and GuideLLM each in a venv of its own under ``~/.cache/accelbench/peers/`` (never
in accelbench's dependencies; GuideLLM's torch is held to the CPU build by a constraint, 1.5 GB instead of
6 GB with CUDA wheels), starts one local server (``transformers serve`` with continuous batching, or
llama.cpp's server with ``--server llamacpp``), and runs accelbench (``run --serve-url``), AIPerf and
GuideLLM against it with the same output length and concurrency, interleaved with the order reversed every
other round (A B C, C B A, ...: at stop 62 a fixed order met a server whose decode slowed over the run,
and AIPerf, always second, read 7% slower TPOT at c=1). accelbench sends the chat template's text to
``/v1/completions`` under a fresh ``--input-seed`` each round, drawn before the round; AIPerf sends the
very texts of that round's cell, each under a new salt (``write_prompts``, written before any client runs:
the same prompts, no cache hit), GuideLLM synthetic text of accelbench's mean prompt length. Each
client's figures are computed from its own per-request records with one set of definitions, and printed
with their ratios to accelbench's (median over the repeats):

* TTFT: send to the first streamed token (p50, p90);
* TPOT: (end - first token) / (output tokens - 1), MLPerf's definition = AIPerf's and GuideLLM's "ITL";
  GuideLLM's own "TPOT" is latency / output tokens (TTFT included) and is shown apart;
* output tok/s: all output tokens / (last end - first send) of the point;
* output tokens: each client counts the reply's text with the model's own tokenizer (MLPerf's "tokens
  counted by the client"; AIPerf's default, so ``--use-server-token-count`` is not passed). The length is
  forced as accelbench forces it on its own server: every special token suppressed, so the text holds every
  token generated (with EOS merely ignored, the stripped turn markers made the text 10-30% shorter).

Usage: ``python benchmarks/llm_endpoint_agreement.py [--repeats 3] [--concurrency 1,4,8] [--requests 8]
[--input-tokens 128] [--output-tokens 64] [--server transformers-cb|llamacpp|scripted] [--clients a,b,c]``
(``scripted``: a server of known TTFT and TPOT, ``--scripted-ttft-ms``/``--scripted-tpot-ms``, whatever
the load: each client's figures against the truth, ``_scripted_server.py``);
``--reread OUT`` prints a finished run's tables again from its folder. Besides the median of the rounds'
medians, each figure is printed pooled over every round's requests with its median's 95% interval: a
round's TTFT median at c >= 4 moves 15-25% with its 16 requests' batch mix.
Measure on an idle machine: AIPerf and GuideLLM use 3-4x accelbench's client CPU, which on 2 cores
is taken from the server (shared/reference/llm_serving_feasibility.md) unless ``--pin`` (the default)
keeps the clients off the server's CPU (the server on the first, every client on the others): at c=8,
4 rounds, stop 61, pinning took AIPerf's pooled TTFT p90 from 1.12-1.13x accelbench's to 1.007x.
The paired table divides each peer's request by accelbench's k-th sent request of the same round (the
same text in the same wave).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import secrets
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from _agreement_figures import METRICS, figures, print_point  # noqa: E402
from _peers import (  # noqa: E402
    PEER_PACKAGES,
    Request,
    Workload,
    accelbench_run,
    ensure_peer,
    read_aiperf,
    run_aiperf,
    run_guidellm,
)  # fmt: skip
from _server_under_test import length_body, pin_clients, pin_server, probed, server, warm_up  # noqa: E402

from tests.e2e import served_llm  # noqa: E402

CLIENTS = ("accelbench", "aiperf", "guidellm")
DEFAULT_INPUT_TOKENS = 128
"""The peers' prompt length when accelbench has not run first to give its own."""


def run_accelbench(
    work: Workload, out: Path, store: Path, run_seed: int
) -> tuple[list[Request], dict[str, float]]:
    """``accelbench run --stacks llm@url --serve-url --input-seed run_seed`` into ``store`` (its cache holds
    the model): its per-request records (the run's ``requests.jsonl``) and its own curve point at this
    concurrency. Refuses a run whose cell seed is not the one the peers' prompts were written from."""
    args = [
        "--workloads", "smollm2-135m", "--stacks", "llm@url",
        "--serve-url", work.url, "--concurrency", str(work.concurrency), "--no-probe",
        "--output-tokens", str(work.output_tokens), "--endpoint-requests", str(work.requests),
        "--rules", "quick", "--json", "--store", str(store), "--endpoint-api", "completions",
        "--input-seed", str(run_seed), "--timeout-s", "3000",
    ]  # fmt: skip
    accelbench_run(args, out, REPO)
    found, own, document = read_accelbench(out, store, work.concurrency)
    stored = int(document["results"][0]["settings"]["input_seed"])
    if stored != cell_seed_of(run_seed):
        raise RuntimeError(f"the cell's seed {stored} is not the one the peers' texts came from")
    return found, own


def cell_seed_of(run_seed: int) -> int:
    """The input seed of the smollm2-135m ``llm@url`` cell of a run of seed ``run_seed``: known before the
    run, so the peers' prompts (its texts) are written before any client of the round runs."""
    from accelbench.cell.seeds import cell_seed
    from accelbench.results import Cell

    return cell_seed(run_seed, Cell("smollm2-135m", "llm@url", "single-stream").key)


def read_accelbench(
    out: Path, store: Path, concurrency: int
) -> tuple[list[Request], dict[str, float], dict[str, Any]]:
    """A round's per-request records (the run's ``requests.jsonl``), its own curve point at
    ``concurrency`` and its ``run --json`` document (in ``out``)."""
    document = json.loads((out / "accelbench.json").read_text())
    points = [p for p in _find(document, "curve") if p.get("concurrency") == concurrency]
    if not points:
        raise RuntimeError(f"no curve point at concurrency {concurrency} in accelbench run --json")
    own = {name: float(points[0][name]) for name in METRICS if name in points[0]}
    found, prompt_tokens = [], []
    for result in document.get("results", []):
        for path in (store / "runs" / result.get("run_id", "-")).rglob("requests.jsonl"):
            for line in path.read_text().splitlines():
                r = json.loads(line)
                timed = r.get("role", "timed") == "timed" and r.get("concurrency") == concurrency
                if timed and r.get("status") == "ok" and r.get("first_content_s") is not None:
                    ttft_s = r["first_content_s"] - r["send_s"]
                    found.append(Request(r["send_s"], ttft_s, r["end_s"], r["output_tokens"]))
                    prompt_tokens.append(r.get("usage_prompt_tokens") or 0)
    if prompt_tokens and all(prompt_tokens):
        own["mean_prompt_tokens"] = statistics.mean(prompt_tokens)
    return found, own, document


def write_prompts(path: Path, work: Workload, cell_seed: int) -> None:
    """The texts of the point accelbench just sent (its cell's seed: ``seeded_texts`` of stream ``point``,
    ``concurrency``), each under a new salt (``peer``: nothing a prefix cache could replay), through the
    chat template as accelbench's ``completions`` prompts are: the peers' prompts, one per line."""
    from transformers import AutoTokenizer

    from accelbench.endpoint.prompts import salted

    tokenizer = AutoTokenizer.from_pretrained(work.tokenizer)
    texts = point_texts(cell_seed, work.requests, work.concurrency)
    prompts = salted(tokenizer, cell_seed, texts, "peer", work.concurrency)
    # AIPerf's warm-up request takes the file's first row (sequential sampling): a row of its own, so its
    # timed requests are accelbench's texts in accelbench's order, the same prefills in the same waves
    # (until stop 59 they were shifted by one: other texts shared each wave)
    warm_up = salted(tokenizer, cell_seed, texts[:1], "peer-warm-up", work.concurrency)
    rows = [{"text": p.text, "output_length": work.output_tokens} for p in (*warm_up, *prompts)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def point_texts(cell_seed: int, requests: int, concurrency: int) -> list[str]:
    """The user texts accelbench's smollm2-135m cell of seed ``cell_seed`` sent at ``concurrency`` (its
    stream ``point``), in order; salted with stream ``point`` they are its prompts."""
    from accelbench.endpoint.prompts import seeded_texts
    from accelbench.registry import instantiate, table

    lengths = tuple(instantiate(table("workload")["smollm2-135m"]).lengths)
    return seeded_texts(cell_seed, lengths, requests, "point", concurrency)


def _find(document: Any, key: str) -> list[dict[str, Any]]:
    """Every list stored under ``key`` anywhere in ``document``, flattened."""
    if isinstance(document, dict):
        here = list(document[key]) if isinstance(document.get(key), list) else []
        return here + [p for value in document.values() for p in _find(value, key)]
    if isinstance(document, list):
        return [p for value in document for p in _find(value, key)]
    return []


def _load() -> float:
    return os.getloadavg()[0]


def main(argv: Sequence[str] | None = None) -> None:
    args = _parse(argv)
    if args.reread:
        for concurrency, rows in reread(Path(args.reread), args.clients).items():
            print_point(rows, args.clients, (args.server, concurrency, args.output_tokens))
        return
    out = Path(args.out or f"/tmp/llm-endpoint-agreement-{int(time.time())}")
    bins: dict[str, Path] = {}
    for name in args.clients:
        if name in PEER_PACKAGES:
            bins[name], spent_s = ensure_peer(name)
            print(
                f"{name}: {PEER_PACKAGES[name]} in {bins[name].parent}"
                + (f" (installed in {spent_s:.0f} s)" if spent_s else "")
            )
    cache_dir = Path(args.cache_dir)
    model_id = served_llm.MODEL_ID
    tokenizer = served_llm.model_folder(cache_dir)
    script_s = (args.scripted_ttft_ms / 1e3, args.scripted_tpot_ms / 1e3)
    cpus = pin_server(args.pin)
    with server(args.server, cache_dir, out, max(args.concurrency), args.output_tokens, script_s) as (
        url,
        fixed,
    ):
        pin_clients(args.pin, cpus)
        body = length_body(args.server, fixed, args.output_tokens, tokenizer)
        warm_up(url, model_id, body)
        input_tokens = args.input_tokens or DEFAULT_INPUT_TOKENS
        by_point = {}
        for concurrency in args.concurrency:  # one server for every point, as a curve is measured
            requests = max(args.requests, 2 * concurrency)
            work = Workload(
                url, model_id, tokenizer, concurrency, requests, input_tokens, args.output_tokens, body
            )
            by_point[concurrency] = _rounds(
                work, args.clients, bins, args.repeats, out / f"c{concurrency}", args.input_tokens is None
            )
    for concurrency, rows in by_point.items():
        print_point(rows, args.clients, (args.server, concurrency, args.output_tokens))
    if args.server == "scripted":
        ttft_s, tpot_s = script_s
        print(f"\nthe truth (scripted server, whatever the load): TTFT {ttft_s:.4g} s, TPOT {tpot_s:.4g} s")


Runner = Callable[[Workload, Path], tuple[list[Request], dict[str, float]]]


def _rounds(
    work: Workload, clients: Sequence[str], bins: dict[str, Path], repeats: int, out: Path, match_input: bool
) -> list[dict[str, Any]]:
    """Each client once per round, the order reversed every other round (A B, B A, ...: a server that drifts
    over the run favours neither); a client that fails is recorded with its reason. Each round's seed is
    drawn first and the peers' prompts (the texts accelbench's cell will send, salted anew) are written
    before any client runs. With ``match_input`` the peers' synthetic prompt length (GuideLLM's) becomes
    accelbench's mean prompt tokens once accelbench has run."""
    store = out / "accelbench-store"  # one store; its cache is the server's (the model is built once)
    store.mkdir(parents=True, exist_ok=True)
    if not (store / "cache").exists():
        (store / "cache").symlink_to(work.tokenizer.parents[1], target_is_directory=True)
    rows = []
    for round_ in range(1, repeats + 1):
        run_seed = secrets.randbelow(2**62)
        prompts = out / f"prompts-round{round_}.jsonl"
        write_prompts(prompts, work, cell_seed_of(run_seed))
        work = dataclasses.replace(work, prompts_file=prompts)
        runners: dict[str, Runner] = {
            "accelbench": lambda w, o: run_accelbench(w, o, store, run_seed),  # noqa: B023 (called now)
            "aiperf": lambda w, o: run_aiperf(bins["aiperf"], w, o),
            "guidellm": lambda w, o: run_guidellm(bins["guidellm"], w, o),
        }
        order = list(clients) if round_ % 2 else list(reversed(clients))
        for name in order:
            probe = probed(
                work.url, work.model, work.extra_body, out / f"{name}-{round_}"
            )  # the server alone
            load, started = _load(), time.monotonic()
            row: dict[str, Any] = {
                "client": name,
                "round": round_,
                "load": load,
                "input": work.input_tokens,
                "probe": probe,
            }
            try:
                requests, own = runners[name](work, out / f"{name}-{round_}")
                row |= {"requests": len(requests), "own": own, **(figures(requests) if requests else {})}
                if match_input and own and own.get("mean_prompt_tokens"):
                    work = dataclasses.replace(work, input_tokens=round(own["mean_prompt_tokens"]))
                    match_input = False
            except Exception as err:  # a failed client is reported, the others go on
                row["error"] = str(err)[:300]
            row["wall_s"] = time.monotonic() - started
            shown = {k: v for k, v in row.items() if k not in ("ttfts_s", "tpots_s", "sent")}
            print(json.dumps(shown), flush=True)
            rows.append(row)
    return rows


def reread(out: Path, clients: Sequence[str]) -> dict[int, list[dict[str, Any]]]:
    """The rows of a finished run from its folder ``out`` (``c<N>/<client>-<round>``), without sending a
    request: to print its tables again (pooled figures included)."""
    readers: dict[str, Callable[[Path, int], tuple[list[Request], dict[str, float]]]] = {
        "accelbench": lambda o, c: read_accelbench(o, o.parent / "accelbench-store", c)[:2],
        "aiperf": lambda o, c: read_aiperf(o),
    }
    by_point: dict[int, list[dict[str, Any]]] = {}
    for point in sorted(out.glob("c*"), key=lambda p: int(p.name[1:]) if p.name[1:].isdigit() else 0):
        if not point.name[1:].isdigit():
            continue
        concurrency, rows = int(point.name[1:]), []
        rounds = sorted({int(d.name.rsplit("-", 1)[1]) for d in point.glob("*-*") if d.name[-1].isdigit()})
        for round_ in rounds:
            for name in clients:
                folder = point / f"{name}-{round_}"
                if name not in readers or not folder.is_dir():
                    continue
                try:
                    requests, own = readers[name](folder, concurrency)
                except (OSError, ValueError, KeyError, RuntimeError) as err:  # a round that failed
                    rows.append({"client": name, "round": round_, "error": f"not read: {str(err)[:200]}"})
                    continue
                row = {"client": name, "round": round_, "requests": len(requests), "own": own, "input": "?"}
                with contextlib.suppress(OSError, ValueError):  # a run from before the probe has none
                    row["probe"] = json.loads((folder / "probe.json").read_text())
                rows.append(row | (figures(requests) if requests else {}))
        by_point[concurrency] = rows
    return by_point


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", default="4", help="one or more, comma-separated (1,4,8)")
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument(
        "--input-tokens", type=int, default=None, help="peers' prompt tokens (default: accelbench's mean)"
    )
    parser.add_argument("--output-tokens", type=int, default=64)
    parser.add_argument(
        "--server", choices=("transformers-cb", "llamacpp", "scripted"), default="transformers-cb"
    )
    parser.add_argument("--scripted-ttft-ms", type=float, default=200.0, help="--server scripted: its TTFT")
    parser.add_argument("--scripted-tpot-ms", type=float, default=30.0, help="--server scripted: its TPOT")
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument(
        "--pin",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the server on the first CPU, every client on the others (default; --no-pin shares every CPU)",
    )
    parser.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "accelbench" / "cache"))
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--reread", default=None, help="print the tables of a finished run's --out folder again (no requests)"
    )
    args = parser.parse_args(argv)
    args.clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    unknown = [c for c in args.clients if c not in CLIENTS]
    try:
        args.concurrency = [int(c) for c in str(args.concurrency).split(",") if c.strip()]
    except ValueError:
        parser.error(f"bad input: --concurrency {args.concurrency!r} is not a list of whole numbers")
    counts = (args.repeats, args.requests, min(args.concurrency, default=0))
    if unknown or min(counts) < 1 or args.output_tokens < 2:
        parser.error(f"bad input: clients {unknown or 'ok'}, counts must be >= 1 (output tokens >= 2)")
    return args


if __name__ == "__main__":
    main()
