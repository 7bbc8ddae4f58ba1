"""The driver of an endpoint cell: a served LLM's throughput-vs-interactivity curve (issue 31).

1. The server: ``llm@url`` sends to ``--serve-url`` (accelbench starts nothing; the model id is the
   workload's model name, which the server's ``/v1/models`` must list when it answers); ``llm@<server>``
   starts the server on loopback from the fp32 folder of ``accelbench.generation.models`` and stops it
   whatever happens. The API key is read from the environment variable ``--api-key-env`` names.
2. One greedy warm-up request (``transformers serve`` CB takes its generation config from the first
   one); a failure there (refused, 401, wrong model, not streaming) makes the cell ``unavailable`` with
   the one-line reason.
3. The curve: for each concurrency of the ladder (``--concurrency``; else 1, 2, 4, ... up to
   ``AUTO_MAX``, stopping once system tokens/s gains less than ``SATURATION_GAIN`` over the best so far
   for two points), a closed loop of fresh salted prompts (``accelbench.endpoint.driver``), the
   point's figures (``accelbench.endpoint.figures``). A point where every request failed ends the
   ladder (the server is gone); the points done are kept. The repeat audit's pairs go inside the
   points from the second on, as timed requests at positions drawn with ``secrets``
   (``accelbench.endpoint.repeat``): nothing is sent after the curve for it.
4. Each point's energy (``accelbench.endpoint.energy``): metered where the server runs on this machine.
   The noise guard (``accelbench.meters.noise``) watches the ladder: other load outside the run's
   process tree (a server the cell started is in it; a ``--serve-url`` server on this machine is the
   run's too: its CPU time is the measured work, not a disturbance; any other process is other load),
   steal, and the reference probe before and after. A disturbed curve is ``unstable`` (not measured
   again: a curve is long, and the guard's evidence is stored with it).
4b. With ``--arrivals poisson``, after the curve (still under the noise guard): the max QPS under the
   goodput bounds with Poisson arrivals, searched from the curve's lowest point
   (``accelbench.endpoint.qps_search``); its requests are audited with the curve's.
5. Every request is a line of ``requests.jsonl`` in the cell's folder, written after each point (a
   cell that times out keeps the points it finished there); the audits
   (``accelbench.endpoint.audits``) judge them; the status follows ``audits.cell_status``.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelbench.cellspec import CellSpec
from accelbench.curve import CurvePoint, QpsSearch
from accelbench.endpoint import figures as point_figures
from accelbench.endpoint.accuracy import Accuracy, accuracy, judged, judged_count
from accelbench.endpoint.client import Prompt, Target
from accelbench.endpoint.confirm import confirmed
from accelbench.endpoint.driver import POISSON, TIMED, Load, run_point
from accelbench.endpoint.energy import PointMeter, point_meter
from accelbench.endpoint.extension import extension, prompts_by_salt
from accelbench.endpoint.facts import EndpointFacts, available_facts
from accelbench.endpoint.outcome import Found, Setup, outcome
from accelbench.endpoint.prompts import salted, seeded_texts
from accelbench.endpoint.qps_search import Probing, not_searched, search_max_qps, start_problem
from accelbench.endpoint.records import RequestRecord
from accelbench.endpoint.repeat import Placing, tagged
from accelbench.endpoint.settings import EndpointSettings
from accelbench.endpoint.stack import URL
from accelbench.errors import Unavailable
from accelbench.generation.base import GenerationContext
from accelbench.generation.loadgen_tokens import scaled_bounds
from accelbench.generation.models import LlmModel, load_model
from accelbench.meters import noise
from accelbench.outcome import Outcome
from accelbench.registry import instantiate
from accelbench.settings import expect

AUTO_MAX = 32
SATURATION_GAIN = 1.1
RECORDS_FILE = "requests.jsonl"


def measure(spec: CellSpec) -> Outcome:
    """The outcome of an endpoint cell (see the module text)."""
    stack, workload, model = served(spec)
    settings = expect(spec.settings, EndpointSettings)
    lengths: tuple[int, int] = tuple(workload.lengths)
    tokenizer = model_tokenizer(model)
    count = token_counter(tokenizer)
    bounds = scaled_bounds(model.params, workload.server_floor_ttft_s, workload.server_floor_tpot_s)
    limits = point_figures.Bounds(bounds.ttft_s, bounds.tpot_s)
    setup = Setup(spec=spec, stack=stack, model=model, settings=settings, lengths=lengths, limits=limits)
    path = Path(spec.folders.cell_dir) / RECORDS_FILE
    path.unlink(missing_ok=True)
    with serving(stack, spec, model, settings) as target:
        started = time.perf_counter()
        warm_up(target, tokenizer, count, setup)
        guard, meter = watch(spec, stack, settings.serve_url)
        try:
            climbed = ladder(
                target, tokenizer, spec.input_seed, settings, lengths, count, limits, meter, path
            )
        finally:
            meter.close()
        curve, records, stopped = climbed.curve, climbed.records, climbed.stopped
        searched, poisson = _search(target, tokenizer, count, setup, (curve, stopped))
        probe = noise.end(guard)
        duration_s = time.perf_counter() - started
        work = (
            lengths,
            settings.requests_at(curve[0].concurrency) if curve else 0,
            settings.max_tokens,
        )
        probe, again = confirmed(probe, target, tokenizer, spec.input_seed, work, count, (curve, records))
        append_records(path, again)
    sent = (records, poisson)
    checked = _accuracy(setup, tokenizer, sent, climbed.pair_prompts)
    note = f"{meter.note}; {meter.formula}" if meter.formula else meter.note
    found = Found(
        curve=curve,
        timed=records,
        stopped=stopped,
        duration_s=duration_s,
        accuracy=checked,
        probe=probe,
        energy_note=note,
        qps_search=searched,
        searched=poisson,
    )
    return outcome(setup, found)


def _search(
    target: Target,
    tokenizer: Any,
    count: Callable[[str], int],
    setup: Setup,
    ladder_done: tuple[Sequence[CurvePoint], str],
) -> tuple[QpsSearch | None, list[RequestRecord]]:
    """The max-QPS search when asked (``settings.arrivals``), from the curve's lowest point
    (``ladder_done``: the curve and why the ladder stopped early, "" if it did not)."""
    if setup.settings.arrivals != POISSON:
        return None, []
    curve, stopped = ladder_done
    problem = start_problem(curve, stopped, setup.limits)
    if problem:
        return not_searched(setup.limits, problem), []
    spec, limits = setup.spec, setup.limits
    path = Path(spec.folders.cell_dir) / RECORDS_FILE
    probing = Probing(
        target=target,
        tokenizer=tokenizer,
        input_seed=spec.input_seed,
        lengths=setup.lengths,
        max_tokens=setup.settings.max_tokens,
        count_tokens=count,
        bounds=limits,
        keep=lambda done: append_records(path, done),
    )
    return search_max_qps(probing, min(curve, key=lambda p: p.concurrency).requests_per_s)


def _accuracy(
    setup: Setup,
    tokenizer: Any,
    sent: tuple[Sequence[RequestRecord], Sequence[RequestRecord]],
    pair_prompts: Mapping[str, Prompt],
) -> Accuracy:
    """Replies drawn now, after the curve and the search, from the secret seed across every point and
    probe (``sent``: the curve's requests, the max-QPS search's), against the fp32 reference
    (``endpoint.accuracy``); the repeat audit's pairs (``pair_prompts``) are curve requests too."""
    records, searched = sent
    spec, settings, lengths = setup.spec, setup.settings, setup.lengths
    prompts = probe_prompts(tokenizer, spec.input_seed, lengths, searched) | dict(pair_prompts)
    for c in sorted({r.concurrency for r in records}):
        texts = seeded_texts(spec.input_seed, lengths, settings.requests_at(c), "point", c)
        prompts |= {p.salt: p for p in salted(tokenizer, spec.input_seed, texts, "point", c)}
        extra = {r.salt for r in records if r.concurrency == c} - prompts.keys()
        prompts |= prompts_by_salt(tokenizer, spec.input_seed, lengths, c, extra)
    ctx = GenerationContext(Path(spec.folders.model_cache_dir) / "llm-stacks", threads=spec.threads or 1)
    chosen = judged([*records, *searched], prompts, spec.input_seed, judged_count(setup.model.params))
    return accuracy(setup.model, tokenizer, chosen, prompts, settings.max_tokens, ctx)


def probe_prompts(
    tokenizer: Any, input_seed: int, lengths: tuple[int, int], searched: Sequence[RequestRecord]
) -> dict[str, Prompt]:
    """The prompts of the max-QPS search's requests by salt: its probes ran one after another, each at a
    rate of its own (``qps_search.run_probe``: probe k sent the stream (``poisson``, k))."""
    probes: list[list[RequestRecord]] = []
    for record in searched:
        if not probes or probes[-1][0].target_qps != record.target_qps:
            probes.append([])
        probes[-1].append(record)
    prompts: dict[str, Prompt] = {}
    for number, probe in enumerate(probes):
        texts = seeded_texts(input_seed, lengths, len(probe), POISSON, number)
        prompts |= {p.salt: p for p in salted(tokenizer, input_seed, texts, POISSON, number)}
    return prompts


def served(spec: CellSpec) -> tuple[EndpointFacts, Any, LlmModel]:
    """What an endpoint or sessions cell serves: the stack's facts (its code runs in a SUT process, never
    here), the workload and its model."""
    stack = available_facts(spec)
    workload = instantiate(spec.refs.workload)
    return stack, workload, load_model(workload.model, Path(spec.folders.model_cache_dir))


def watch(spec: CellSpec, stack: EndpointFacts, serve_url: str | None) -> tuple[noise.ProbeStart, PointMeter]:
    """The noise guard begun, then the points' energy meter: of the server the cell started, or of the
    one behind ``serve_url`` (``--serve-url``) when the stack serves a URL."""
    remote = serve_url if stack.server == URL else None
    guard = noise.begin(spec.noise_floor, remote)
    return guard, point_meter(remote, stack.server != URL, spec.measured_fp32_flops_per_s)


def model_tokenizer(model: LlmModel) -> Any:
    """The model's own tokenizer (from its folder)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model.folder)


def token_counter(tokenizer: Any) -> Callable[[str], int]:
    """Counts a reply's tokens with the model's own tokenizer (no special tokens added)."""
    return lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])


@contextlib.contextmanager
def serving(
    stack: EndpointFacts, spec: CellSpec, model: LlmModel, settings: EndpointSettings
) -> Iterator[Target]:
    """The target of the cell's requests while the server (started here, or remote) serves."""
    key = os.environ.get(settings.api_key_env) or None
    if stack.server == URL:
        if not settings.serve_url:
            raise Unavailable(f"{stack.name} sends its requests to --serve-url, and the run has none")
        model_id = remote_model_id(settings.serve_url, model.name, key)
        fields = remote_length_fields(settings.serve_url, model_id, key)
        yield Target(settings.serve_url, model_id, settings.api, key, fields)
        return
    from accelbench.endpoint.servers import ServerSettings, get_server

    server = get_server(stack.server)
    most = max(settings.ladder or (AUTO_MAX,))
    try:
        url, model_id = server.start(
            model.folder,
            Path(spec.folders.cell_dir),
            ServerSettings(most, settings.max_tokens, server_threads(spec.threads)),
        )
        yield Target(url, model_id, settings.api, key, server.extra_body(settings.max_tokens))
    finally:
        server.stop()


def server_threads(threads: int) -> int:
    """The server's intra-op threads: half the cell's (the client shares the machine; on a loaded 2-core
    machine two threads stall each other: ``docs/llm.md``), at least one."""
    return max(1, threads // 2)


def remote_model_id(url: str, name: str, key: str | None) -> str:
    """``name``, after checking that ``GET /v1/models`` (when it answers) lists it."""
    listed = [str(m.get("id")) for m in _models(url, key)]
    if listed and name not in listed:
        base = url.rstrip("/").removesuffix("/v1")
        raise Unavailable(f"the server at {base} serves {', '.join(listed[:5])}, not {name}")
    return name


LENGTH_FIELDS: dict[str, dict[str, Any]] = {
    "vllm": {"ignore_eos": True},
    "sglang": {"ignore_eos": True},
    "llamacpp": {"ignore_eos": True},
}
"""The request fields that make every reply ``max_tokens`` long on a server that ``GET /v1/models``
names as its models' ``owned_by`` (each server's own field; any other server gets none, and replies
that end early are a warning: ``outcome.length_warnings``)."""


def remote_length_fields(url: str, name: str, key: str | None) -> dict[str, Any]:
    """The fields that force the reply length on the server at ``url`` serving ``name`` ({}: unknown)."""
    owners = {str(m.get("owned_by", "")).lower() for m in _models(url, key) if m.get("id") == name}
    return next((dict(LENGTH_FIELDS[o]) for o in sorted(owners) if o in LENGTH_FIELDS), {})


def _models(url: str, key: str | None) -> list[dict[str, Any]]:
    """``GET /v1/models``' entries ([] when it does not answer, or not with JSON)."""
    import urllib.request

    base = url.rstrip("/").removesuffix("/v1")
    request = urllib.request.Request(
        f"{base}/v1/models", headers={"Authorization": f"Bearer {key}"} if key else {}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            data = json.loads(answer.read()).get("data", [])
    except Exception:  # no /v1/models (or not JSON): the warm-up request decides
        return []
    return [m for m in data if isinstance(m, dict)] if isinstance(data, list) else []


def warm_up(target: Target, tokenizer: Any, count: Callable[[str], int], setup: Setup) -> None:
    """One greedy request; Unavailable with its one-line reason when it fails."""
    seed = setup.spec.input_seed
    prompts = salted(tokenizer, seed, seeded_texts(seed, setup.lengths, 1, "warm-up"), "warm-up")
    (record,) = run_point(target, prompts, Load(1, min(setup.settings.max_tokens, 8)), count)
    if not record.ok:
        raise Unavailable(f"{target.endpoint}: {record.status}: {record.error}".rstrip(": "))


def ladder(
    target: Target,
    tokenizer: Any,
    input_seed: int,
    settings: EndpointSettings,
    lengths: tuple[int, int],
    count: Callable[[str], int],
    limits: point_figures.Bounds,
    meter: PointMeter | None = None,
    path: Path | None = None,
) -> Climbed:
    """The curve's points (each metered by ``meter``: ``accelbench.endpoint.energy``), every request
    (the repeat audit's pairs among them: ``accelbench.endpoint.repeat``; each point's appended to
    ``path`` as it ends, when given) and why the ladder stopped."""
    meter = meter or PointMeter(None, "")
    curve: list[CurvePoint] = []
    records: list[RequestRecord] = []
    placing = Placing(tokenizer, input_seed, count, len(settings.ladder))
    for number, concurrency in enumerate(concurrencies(settings.ladder, curve)):
        n = settings.requests_at(concurrency)
        texts = seeded_texts(input_seed, lengths, n, "point", concurrency)
        timed = salted(tokenizer, input_seed, texts, "point", concurrency)
        prompts, parts = placing.point(number, texts, timed)
        input_tokens = sum(count(p.text) for p in prompts)
        meter.begin(concurrency)
        load = Load(concurrency, settings.max_tokens)
        more = (
            extension(tokenizer, input_seed, lengths, concurrency, settings.point_max_s)
            if settings.point_max_s > 0
            else None
        )
        done = tagged(run_point(target, prompts, load, count, [TIMED] * len(prompts), more), parts)
        if more is not None:
            input_tokens += sum(count(more.prompt(k).text) for k in range(len(done) - len(prompts)))
        energy = meter.end(concurrency)
        records += done
        if path is not None:
            append_records(path, done)  # kept should the cell time out later
        curve.append(point_figures.point(concurrency, done, limits, input_tokens, energy))
        if not any(r.ok for r in done):
            failed = f"every request failed at concurrency {concurrency}: {done[0].status}: {done[0].error}"
            return Climbed(curve, records, failed, placing.prompts)
    return Climbed(curve, records, "", placing.prompts)


@dataclass(frozen=True, slots=True)
class Climbed:
    """What the ladder measured: the curve, every request, why it stopped early ("" if it did not),
    and the repeat audit's pair prompts by salt."""

    curve: list[CurvePoint]
    records: list[RequestRecord]
    stopped: str
    pair_prompts: Mapping[str, Prompt]


def concurrencies(asked: Sequence[int], curve: Sequence[CurvePoint]) -> Iterator[int]:
    """The ladder: ``asked``, else 1, 2, 4, ... up to ``AUTO_MAX`` until two points gain less than
    ``SATURATION_GAIN`` over the best before them (``curve`` grows as the points are measured)."""
    if asked:
        yield from asked
        return
    concurrency = 1
    while concurrency <= AUTO_MAX and not saturated(curve):
        yield concurrency
        concurrency *= 2


def saturated(curve: Sequence[CurvePoint]) -> bool:
    """The last two points gained less than ``SATURATION_GAIN`` over the best point before them."""
    if len(curve) < 3:
        return False
    best = max(p.output_tokens_per_s for p in curve[:-2])
    return all(p.output_tokens_per_s < SATURATION_GAIN * best for p in curve[-2:])


def append_records(path: Path, records: Sequence[RequestRecord]) -> None:
    """Add ``records`` to ``requests.jsonl``, one per line (written point by point)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as out:
        for record in records:
            out.write(json.dumps(record.to_dict(), sort_keys=True) + "\n")
