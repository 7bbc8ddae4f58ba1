"""Do accelbench's agentic sessions measure what AIPerf's multi-turn mode measures? (issue 44, scope 5)

One local ``transformers serve`` (SmolLM2-135M, continuous batching, 1 thread; every reply forced to the
same length as in ``llm_endpoint_agreement.py``), and each round, interleaved (A B, B A, ...):

* a fresh multi-turn file in AIPerf 0.13.0's ``multi_turn`` format, sent by both tools in turn, the
  order reversed every other round (a server that drifts over the run favours neither): N sessions of
  T turns, each turn a new user message of seeded words, ``delay`` 0, ``output_length`` K, a leading
  ``role: system`` turn (accelbench's declared shared system prompt; AIPerf hoists it into every request
  as accelbench sends it);
* accelbench replays it (``run --serve-url URL --session-trace FILE --sessions N``): each session's first
  message opens with its salt ``[<32 hex>] ``; its forbidden-reuse audits' pairs take two of the
  point's N slots (``accelbench.sessions.slots``), so it never has more than N requests in flight;
* AIPerf (its own venv, ``--custom-dataset-type multi_turn --concurrency N``: N sessions hold N slots,
  each session's next turn after its reply) replays the same file with each session's first message
  opened by a new salt of the same form (same length, nothing a prefix cache could replay).

Both tools keep each conversation's real replies. Figures come from each tool's per-turn records with one
definition: TTFT = send to the first streamed content, TPOT = (end - first content) / (tokens - 1) with
tokens counted by the client (the model's tokenizer), medians over all turns and by turn index, pooled over
the rounds with the median's distribution-free 95% interval; the input tokens each tool reports per turn
index (accelbench: the context it sent, chat template included; AIPerf: its ISL) show both sent one
conversation. accelbench's audit pairs take the place of sessions (AIPerf has none): the turns whose
time overlaps an audit request are shown apart too (``clean``), and those that no audit request touched
either, in flight or since the session's turn before (``untouched``: the server's prefix cache met no
audit traffic between two turns of the session, as AIPerf's never does). Until stop 55 the pairs ran
beside the turns, and the turns they overlapped read 4-10x AIPerf's TTFT. Beside the pairs by session,
``ranked`` pairs each round's k-th fastest turn of a turn index with the other tool's k-th: at N
sessions the turns of one index arrive together and the first is prefilled alone (0.45 s against 1.4 s
for the others at 4 sessions, stop 63), and which session is first is the server's draw, not a property
of the client, so pairs by session mix a fast turn with a slow one.

Usage: ``python benchmarks/session_agreement.py [--sessions 1,4] [--turns 4] [--rounds 3]
[--output-tokens 32] [--words 40] [--server transformers-cb|scripted]`` (``scripted``: a server of known
TTFT and TPOT whatever the load, ``_scripted_server.py``: each tool against the truth);
``--reread OUT`` prints a finished run's tables again.
Measure on an idle machine (AIPerf's client takes 3-4x accelbench's CPU, from the server on 2 cores
unless ``--pin``, the default, keeps both tools off the server's CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from _peers import accelbench_run, aiperf_records, ensure_peer, run  # noqa: E402
from _server_under_test import length_body, pin_clients, pin_server, probed, server, warm_up  # noqa: E402
from _session_tables import CLIENTS, TurnTime, print_paired, print_tables  # noqa: E402

from accelbench.generation.prompts import seeded_words  # noqa: E402
from accelbench.sessions.workload import SYSTEM_PROMPT  # noqa: E402
from tests.e2e import served_llm  # noqa: E402


def write_trace(path: Path, sessions: int, turns: int, words: int, output_tokens: int, seed: int) -> None:
    """The round's ``multi_turn`` file: ``sessions`` sessions of ``turns`` user messages of ``words``
    seeded words each (a fresh ``seed`` a round: no text repeats across rounds)."""
    rng = np.random.default_rng(seed)
    lines = []
    for number in range(sessions):
        first: list[dict[str, Any]] = [{"role": "system", "text": SYSTEM_PROMPT}]
        asked = [
            {"text": " ".join(seeded_words(rng, words)), "delay": 0, "output_length": output_tokens}
            for _ in range(turns)
        ]
        lines.append(json.dumps({"session_id": f"s{number}", "turns": first + asked}))
    path.write_text("\n".join(lines) + "\n")


def salted_copy(source: Path, target: Path) -> None:
    """``source`` with each session's first user message opened by a new salt, as accelbench opens its."""
    lines = []
    for line in source.read_text().splitlines():
        session = json.loads(line)
        user = next(t for t in session["turns"] if t.get("role", "user") == "user")
        user["text"] = f"[{secrets.token_hex(16)}] {user['text']}"
        lines.append(json.dumps(session))
    target.write_text("\n".join(lines) + "\n")


def run_accelbench(
    url: str, trace: Path, sessions: int, tokens: int, out: Path, store: Path
) -> list[TurnTime]:
    """``accelbench run`` replaying ``trace`` at ``sessions`` at once: its turns (``turns.jsonl``)."""
    args = [
        "--workloads",
        "smollm2-135m",
        "--stacks",
        "llm@url",
        "--serve-url",
        url,
        "--sessions",
        str(sessions),
        "--session-trace",
        str(trace),
        "--output-tokens",
        str(tokens),
        "--no-probe",
        "--rules",
        "quick",
        "--json",
        "--store",
        str(store),
        "--input-seed",
        str(secrets.randbelow(2**62)),
        "--timeout-s",
        "3000",
    ]
    accelbench_run(args, out, REPO)
    return read_accelbench(out, store)


def read_accelbench(out: Path, store: Path) -> list[TurnTime]:
    """The answered turns of the run in ``out`` (``run --json``) from the store's ``turns.jsonl``."""
    document = json.loads((out / "accelbench.json").read_text())
    run_ids = {str(r.get("run_id")) for r in document.get("results", [])}
    records = [
        json.loads(line)
        for run_id in sorted(run_ids)
        for path in sorted((store / "runs" / run_id).rglob("turns.jsonl"))
        for line in path.read_text().splitlines()
    ]
    audits = [(r["send_s"], r["end_s"]) for r in records if r["role"] not in ("turn", "warm", "cold")]
    found = []
    previous_end = {
        (r["concurrency"], r["session"], r["turn"] + 1): r["end_s"] for r in records if r["role"] == "turn"
    }
    for r in records:
        if r["role"] != "turn" or r["status"] != "ok" or r.get("first_content_s") is None:
            continue
        overlapped = any(send < r["end_s"] and r["send_s"] < end for send, end in audits)
        since_s = previous_end.get((r["concurrency"], r["session"], r["turn"]), 0.0)
        after_audit = any(since_s < end <= r["send_s"] for _, end in audits)
        found.append(
            TurnTime(
                session=str(r["session"]),
                turn=int(r["turn"]),
                send_s=r["send_s"],
                ttft_s=r["first_content_s"] - r["send_s"],
                end_s=r["end_s"],
                output_tokens=int(r["output_tokens"]),
                input_tokens=int(r["context_tokens"]),
                overlapped=overlapped,
                after_audit=after_audit,
            )
        )
    return found


def run_aiperf(
    bin_dir: Path, url: str, trace: Path, sessions: int, body: dict[str, Any], out: Path
) -> list[TurnTime]:
    """AIPerf replaying ``trace`` (salted anew) with ``sessions`` session slots: its per-turn records."""
    out.mkdir(parents=True, exist_ok=True)
    salted_copy(trace, out / "trace.jsonl")
    turns = sum(len(json.loads(line)["turns"]) - 1 for line in trace.read_text().splitlines())
    args = [
        str(bin_dir / "aiperf"),
        "profile",
        "-m",
        served_llm.MODEL_ID,
        "--url",
        url,
        "--endpoint-type",
        "chat",
        "--streaming",
        "--tokenizer",
        str(served_llm.model_folder(_cache())),
        "--input-file",
        str(out / "trace.jsonl"),
        "--custom-dataset-type",
        "multi_turn",
        "--dataset-sampling-strategy",
        "sequential",
        "--concurrency",
        str(sessions),
        "--request-count",
        str(turns),
        "--random-seed",
        "1",
        "--artifact-dir",
        str(out),
        "--ui",
        "none",
        "--extra-inputs",
        json.dumps(body),
        "--no-server-metrics",
    ]
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    run(args, out / "aiperf.log", env)
    return read_aiperf(out)


def read_aiperf(out: Path) -> list[TurnTime]:
    """AIPerf's per-turn records (``profile_export.jsonl``), warm-up left out."""
    found = []
    for meta, metrics in aiperf_records(out):
        send_s = meta["request_start_ns"] / 1e9
        found.append(
            TurnTime(
                session=str(meta.get("conversation_id")),
                turn=int(meta.get("turn_index") or 0),
                send_s=send_s,
                ttft_s=metrics["time_to_first_token"]["value"] / 1e3,
                end_s=meta["request_end_ns"] / 1e9,
                output_tokens=int(metrics["output_token_count"]["value"]),
                input_tokens=int(metrics.get("input_sequence_length", {}).get("value", 0)),
            )
        )
    return found


def reread_rounds(point: Path) -> dict[str, list[TurnTime]]:
    """A finished point's turns, each tool's read again from its rounds' folders (so each turn knows its
    round); from ``turns.json`` when those are gone."""
    rounds = sorted(
        int(p.name.split("-")[1]) for p in point.glob("aiperf-*") if p.name.split("-")[1].isdigit()
    )
    store = point / "accelbench-store"
    turns: dict[str, list[TurnTime]] = {n: [] for n in CLIENTS}
    for round_ in rounds:
        for name in CLIENTS:
            where = point / f"{name}-{round_}"
            try:
                found = read_accelbench(where, store) if name == "accelbench" else read_aiperf(where)
            except (OSError, ValueError, KeyError):  # a round the client did not finish
                continue
            turns[name] += [replace(t, round=round_) for t in found]
    if any(turns.values()):
        return turns
    rows = json.loads((point / "turns.json").read_text())
    return {n: [TurnTime(**t) for t in rows[n]] for n in CLIENTS}


def _cache() -> Path:
    return Path.home() / ".cache" / "accelbench" / "cache"


def main(argv: Sequence[str] | None = None) -> None:
    args = _parse(argv)
    out = Path(args.reread or args.out or f"/tmp/session-agreement-{int(time.time())}")
    if args.reread:
        for sessions in args.sessions:
            point = out / f"s{sessions}"
            stored = reread_rounds(point)
            print_tables(stored, sessions, len(list(point.glob("aiperf-*"))))
            print_paired(stored)
        return
    bin_dir, spent_s = ensure_peer("aiperf")
    print(f"aiperf in {bin_dir.parent}" + (f" (installed in {spent_s:.0f} s)" if spent_s else ""), flush=True)
    folder = served_llm.model_folder(_cache())
    script_s = (args.scripted_ttft_ms / 1e3, args.scripted_tpot_ms / 1e3)
    cpus = pin_server(args.pin)
    with server(args.server, _cache(), out, max(args.sessions), args.output_tokens, script_s) as (url, fixed):
        pin_clients(args.pin, cpus)
        body = length_body(args.server, fixed, args.output_tokens, folder)
        warm_up(url, served_llm.MODEL_ID, body)
        for sessions in args.sessions:
            point = out / f"s{sessions}"
            store = point / "accelbench-store"
            store.mkdir(parents=True, exist_ok=True)
            if not (store / "cache").exists():
                (store / "cache").symlink_to(folder.parents[1], target_is_directory=True)
            turns: dict[str, list[TurnTime]] = {n: [] for n in CLIENTS}
            for round_ in range(1, args.rounds + 1):
                trace = point / f"trace-{round_}.jsonl"
                write_trace(trace, sessions, args.turns, args.words, args.output_tokens, secrets.randbits(62))
                for name in CLIENTS if round_ % 2 else CLIENTS[::-1]:  # A B, B A: drift favours neither
                    where = point / f"{name}-{round_}"
                    probe = probed(url, served_llm.MODEL_ID, body, where)  # the server alone, just before
                    started, load = time.monotonic(), os.getloadavg()[0]
                    try:
                        if name == "accelbench":
                            found = run_accelbench(url, trace, sessions, args.output_tokens, where, store)
                        else:
                            found = run_aiperf(bin_dir, url, trace, sessions, body, where)
                    except Exception as err:  # a failed client is reported, the other goes on
                        print(f"{name} round {round_}: {str(err)[:300]}", flush=True)
                        continue
                    turns[name] += [replace(t, round=round_) for t in found]
                    wall_s = time.monotonic() - started
                    print(
                        f"s{sessions} round {round_} {name}: {len(found)} turns, {wall_s:.0f} s, "
                        f"load {load:.1f}, the server alone before: TPOT "
                        + (f"{probe['tpot_s'] * 1e3:.1f} ms" if probe else "not probed"),
                        flush=True,
                    )
            (point / "turns.json").write_text(json.dumps({n: [asdict(t) for t in turns[n]] for n in CLIENTS}))
            print_tables(turns, sessions, args.rounds)
            print_paired(turns)
    if args.server == "scripted":
        print(
            f"\nthe truth (scripted server, whatever the load): TTFT {script_s[0]:.4g} s, "
            f"TPOT {script_s[1]:.4g} s"
        )


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--sessions", default="1,4", help="sessions at once, one point each (1,4)")
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output-tokens", type=int, default=32)
    parser.add_argument("--words", type=int, default=40, help="seeded words per user message")
    parser.add_argument("--server", choices=("transformers-cb", "scripted"), default="transformers-cb")
    parser.add_argument(
        "--pin",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the server on the first CPU, both tools on the others (default; --no-pin shares every CPU)",
    )
    parser.add_argument("--scripted-ttft-ms", type=float, default=200.0, help="--server scripted: its TTFT")
    parser.add_argument("--scripted-tpot-ms", type=float, default=30.0, help="--server scripted: its TPOT")
    parser.add_argument("--out", default=None)
    parser.add_argument("--reread", default=None, help="print a finished run's tables again (no requests)")
    args = parser.parse_args(argv)
    try:
        args.sessions = [int(s) for s in str(args.sessions).split(",") if s.strip()]
    except ValueError:
        parser.error(f"bad input: --sessions {args.sessions!r} is not a list of whole numbers")
    if min([args.turns, args.rounds, args.words, *args.sessions], default=0) < 1 or args.output_tokens < 2:
        parser.error("bad input: sessions, turns, rounds and words must be >= 1, output tokens >= 2")
    return args


if __name__ == "__main__":
    main()
