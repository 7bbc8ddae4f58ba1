"""The driver of a sessions cell (issue 44): an endpoint stack measured with agentic multi-turn sessions.

``accelbench.endpoint.cell.measure`` hands a cell here when the run asks for sessions (``--sessions``).
1. The server, as the endpoint curve has it (``endpoint.cell.serving``: ``--serve-url`` or a server
   started on loopback, the reply length forced where the server allows).
2. The warm-up pass: one session of the workload sent whole (its own pass: its salt is not the
   measured sessions'; the first point's copied-audit decoys replay it); a failure makes the cell
   ``unavailable`` with the one-line reason.
3. The ladder: for each load (``--sessions 1,2,4``) that many sessions at once (or, ``--session-rate``,
   sessions arriving at each rate: ``accelbench.sessions.load``), fresh from the synthetic
   generator (``accelbench.sessions.workload``, pass ``load-<n>``) or replayed from ``--session-trace``
   (``accelbench.sessions.trace``; both made before the server starts: ``accelbench.sessions.source``),
   each turn with the conversation so
   far (``accelbench.sessions.driver``), with the forbidden-reuse audits slipped in
   (``accelbench.sessions.forbidden``: altered pairs at places drawn with ``secrets``, and a decoy pair
   replaying a session of the pass before); the point's figures
   (``accelbench.sessions.figures``, of the sessions' turns only). A point
   where every turn failed ends the ladder. Every turn is a line of ``turns.jsonl`` in the cell's folder,
   written point by point.
4. The reuse probe (``accelbench.sessions.reuse``): drawn turns of the last load sent again alone, with
   their own history and as a fresh session: the TTFT drop a reused prefix gives.
5. The inline accuracy check (``accelbench.sessions.accuracy``): turns drawn after the run against the
   fp32 reference's replies to their conversations, once the server has stopped.
6. The audits and the status (``accelbench.sessions.outcome``).

The noise guard (``accelbench.meters.noise``) watches steps 3 and 4, as it watches the curve: other load
outside the run's process tree (a server the cell started is in it; a ``--serve-url`` server on this
machine is the run's too), steal, and the reference probe before and after. Other load or steal past
their limits make the cell ``unstable``; the turns' times vary with their context, so no series
corroborates the probe's drift, and a drift alone is a warning (``noise.drift_as_warning``, as a
training cell's).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from accelbench.cellspec import CellSpec
from accelbench.endpoint.accuracy import Accuracy, judged_count
from accelbench.endpoint.cell import model_tokenizer, served, serving, token_counter, watch
from accelbench.endpoint.client import Target
from accelbench.endpoint.energy import PointMeter
from accelbench.endpoint.facts import EndpointFacts
from accelbench.endpoint.figures import Bounds
from accelbench.endpoint.servers import prefix_cache
from accelbench.endpoint.settings import EndpointSettings
from accelbench.errors import Unavailable
from accelbench.generation.base import GenerationContext
from accelbench.generation.loadgen_tokens import scaled_bounds
from accelbench.generation.models import LlmModel
from accelbench.head import Head, NoiseProbe
from accelbench.meters import noise
from accelbench.outcome import Outcome
from accelbench.session_figures import ReuseFigures, SessionFigures, SessionPoint
from accelbench.sessions import forbidden, reuse
from accelbench.sessions.accuracy import asked_tokens, check, judged_replies
from accelbench.sessions.body import SessionsBody
from accelbench.sessions.driver import TURN, Counters, context_counter, run_load, run_point
from accelbench.sessions.figures import UNBOUNDED, point
from accelbench.sessions.load import Load
from accelbench.sessions.outcome import status_of
from accelbench.sessions.records import TurnRecord
from accelbench.sessions.settings import SessionSettings
from accelbench.sessions.source import Source, source_of
from accelbench.settings import expect

TURNS_FILE = "turns.jsonl"


def measure(spec: CellSpec) -> Outcome:
    """The outcome of a sessions cell (see the module text)."""
    stack, workload, model = served(spec)
    settings = expect(spec.settings, SessionSettings)
    slo = turn_slo(model.params, workload)
    tokenizer, counters = _tokenizer(model)
    source = source_of(settings, spec.input_seed, counters[0])
    path = Path(spec.folders.cell_dir) / TURNS_FILE
    path.unlink(missing_ok=True)
    with serving(stack, spec, model, _served(settings, source)) as target:
        started = time.perf_counter()
        warm_up(target, source, counters)
        guard, meter = watch(spec, stack, settings.serve_url)
        try:
            ladder, records, stopped = run_ladder(
                target, source, settings.max_tokens, counters, path, (slo, meter)
            )
        finally:
            meter.close()
        duration_s = time.perf_counter() - started
        reused = None if stopped else reuse_probe(target, spec.input_seed, source, counters, (records, path))
        probe, drift_notes = noise.drift_as_warning(noise.end(guard))
    checked = inline_accuracy(model, tokenizer, spec, (records, source), settings.max_tokens)
    (status, why), section = status_of(records, ladder, stopped, source.max_tokens, (checked, probe))
    head = Head(
        status,
        why,
        noise=probe,
        warnings=_warnings(ladder, probe, drift_notes),
        effective_precision=stack.precision,
        versions=dict(stack.versions),
        settings=_settings(spec, stack, settings, source),
    )
    figures = SessionFigures(
        endpoint=stack.name,
        model=model.name,
        params=model.params,
        workload=source.workload,
        turns_per_session=source.turns,
        max_tokens=source.max_tokens,
        shared_prefix_tokens=counters[1]([{"role": "system", "content": source.system}]),
        sessions_ladder=tuple(ladder),
        turns_file=_stored_path(path, Path(spec.folders.run_dir)),
        duration_s=duration_s,
        reuse=reused,
        prefix_cache=prefix_cache(stack.server),
        turn_slo_ttft_s=slo.ttft_s,
        turn_slo_tpot_s=slo.tpot_s,
        energy_note=f"{meter.note}; {meter.formula}" if meter.formula else meter.note,
        accuracy=checked.record() if checked.shares else None,
    )
    return Outcome(head, SessionsBody(session_ladder=figures, audit=section))


def _tokenizer(model: LlmModel) -> tuple[Any, Counters]:
    """The model's own tokenizer and the client's counts by it (a text's tokens, a conversation's)."""
    tokenizer = model_tokenizer(model)  # a conversation's counter has its own: the driver runs it on a
    # thread of its own while the loop counts replies (``sessions.driver._Load.counting``)
    return tokenizer, (token_counter(tokenizer), context_counter(model_tokenizer(model)))


def _warnings(
    ladder: Sequence[SessionPoint], probe: NoiseProbe, drift_notes: Sequence[str]
) -> tuple[str, ...]:
    """The cell's warnings: rate points that fell behind, and the noise guard's notes."""
    behind = [f"{p.rate_per_s:g} sessions/s fell behind: {p.behind}" for p in ladder if p.behind]
    return (*behind, *drift_notes, *noise.guard_warnings(probe))


def turn_slo(params: int, workload: Any) -> Bounds:
    """The per-turn SLO of the ladder's goodput: the workload's TTFT and TPOT bounds scaled to the model
    (``generation.loadgen_tokens.scaled_bounds``), as the curve's goodput."""
    bounds = scaled_bounds(params, workload.server_floor_ttft_s, workload.server_floor_tpot_s)
    return Bounds(bounds.ttft_s, bounds.tpot_s)


def _served(settings: SessionSettings, source: Source) -> EndpointSettings:
    """The endpoint settings the server is started (or reached) with: sized for the longest reply."""
    return EndpointSettings(
        ladder=settings.ladder or (settings.in_flight_cap,),  # a rate point holds at most the cap at once
        max_tokens=source.max_tokens,
        api_key_env=settings.api_key_env,
        serve_url=settings.serve_url,
    )


def _stored_path(path: Path, run_dir: Path) -> str:
    """``path`` relative to the run folder when inside it, else as it is."""
    return str(path.relative_to(run_dir)) if path.is_relative_to(run_dir) else str(path)


def inline_accuracy(
    model: LlmModel,
    tokenizer: Any,
    spec: CellSpec,
    done: tuple[Sequence[TurnRecord], Source],
    max_tokens: int,
) -> Accuracy:
    """Replies drawn now, after the ladder, from the secret input seed (the turns' and the audit
    requests'), against the fp32 reference's replies to their conversations
    (``accelbench.sessions.accuracy``; ``max_tokens``: a reply's length where its turn sets none)."""
    records, source = done
    chosen = judged_replies(records, spec.input_seed, judged_count(model.params))
    lengths = [asked_tokens(r, source.passes, max_tokens) for r in chosen]
    ctx = GenerationContext(Path(spec.folders.model_cache_dir) / "llm-stacks", threads=spec.threads or 1)
    return check(model, tokenizer, chosen, (records, source.passes), lengths, ctx)


def reuse_probe(
    target: Target,
    input_seed: int,
    source: Source,
    counters: Counters,
    ladder_done: tuple[Sequence[TurnRecord], Path],
) -> ReuseFigures:
    """The reuse probe on the last load point's turns (``accelbench.sessions.reuse``); its sends are
    lines of ``turns.jsonl`` too (roles ``warm`` and ``cold``)."""
    records, path = ladder_done
    last = list(source.passes)[-1]
    mine = [r for r in records if Load.of(r.request) == last and r.request.role == TURN]
    sent = reuse.probe(target, input_seed, source.passes[last], mine, source.max_tokens, counters)
    append_turns(path, sent)
    return reuse.figures(sent)


def warm_up(target: Target, source: Source, counters: Counters) -> None:
    """The warm-up pass's session whole (``Source.warm``: the first point's decoys replay it);
    Unavailable with its first failure's one-line reason when a turn of it fails."""
    records = run_load(target, list(source.warm), source.max_tokens, *counters)
    failed = next((r.request for r in records if not r.request.ok), None)
    if failed is not None or not records:
        why = f"{failed.status}: {failed.error}" if failed else "no warm-up turn was sent"
        raise Unavailable(f"{target.endpoint}: {why}".rstrip(": "))


def run_ladder(
    target: Target,
    source: Source,
    max_tokens: int,
    counters: Counters,
    path: Path,
    judged: tuple[Bounds, PointMeter] | None = None,
) -> tuple[list[SessionPoint], list[TurnRecord], str]:
    """Every load point's figures (its goodput under the per-turn SLO, its energy by the meter: ``judged``),
    every turn, and why the ladder stopped early ("" if it did not) (``max_tokens``: a reply's tokens
    where its turn sets none)."""
    slo, meter = judged or (UNBOUNDED, PointMeter(None, "not metered"))
    ladder: list[SessionPoint] = []
    records: list[TurnRecord] = []
    counts = {load: [len(s.turns) for s in sessions] for load, sessions in source.passes.items()}
    planned = forbidden.plan_turns(counts, source.delay_s)
    answered = list(source.warm)  # the sessions of the pass before: the decoys' sources
    for number, (load, sessions) in enumerate(source.passes.items()):
        sources = random.SystemRandom().sample(answered, min(forbidden.DECOYS, len(answered)))
        decoys = [forbidden.decoys(s, counters[1], i) for i, s in enumerate(sources)]
        meter.begin(number)
        opening = source.openings.get(load)
        done, opened = run_point(target, sessions, max_tokens, counters, planned[load], opening, decoys)
        energy = meter.end(number)
        append_turns(path, done)
        records += done
        turns = [r for r in done if r.request.role == TURN]
        whole = {r.session for r in turns if r.request.ok} - {r.session for r in turns if not r.request.ok}
        answered = [s for s in sessions if s.number in whole]  # every turn answered: a source to replay
        audits = [r for r in done if r.request.role != TURN]
        ladder.append(point(opened.started if opened else load.sessions, turns, slo, energy, opened, audits))
        if not any(r.request.ok for r in turns):
            first = done[0].request if done else None
            why = f"{first.status}: {first.error}" if first else "no session started"
            return ladder, records, f"every turn failed at {load}: {why}"
    return ladder, records, ""


def append_turns(path: Path, records: Sequence[TurnRecord]) -> None:
    """Add ``records`` to ``turns.jsonl``, one per line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as out:
        for record in records:
            out.write(json.dumps(record.to_dict(), sort_keys=True) + "\n")


def _settings(
    spec: CellSpec, stack: EndpointFacts, settings: SessionSettings, source: Source
) -> dict[str, Any]:
    """The result's settings of a sessions cell (a replayed trace: its file's name and sha256)."""
    return {
        "threads": spec.threads,
        "seed": spec.seed,
        "sessions": list(settings.ladder),
        "session_rates": list(settings.rates),
        "session_count": settings.rate_sessions if settings.rates else None,
        "in_flight_cap": settings.in_flight_cap if settings.rates else None,
        "turns_per_session": source.turns,
        "max_tokens": source.max_tokens,
        "api_key_env": settings.api_key_env,
        "serve_url": settings.serve_url if stack.server == "url" else None,
        "session_trace": source.trace,
        "session_trace_sha256": settings.trace_sha256 if source.trace else None,
    }
