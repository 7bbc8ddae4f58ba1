"""The stored ``generation`` section of a sessions cell (``accelbench.sessions``, issue 44):
``SessionFigures``, one ``SessionPoint`` per load in ladder order, each with its ``TurnFigures`` by turn
number. A step function like the curve: nothing between two loads is implied.

Times are seconds, tokens are the client's counts with the model's tokenizer; ``cached_tokens`` is the
server's own report (``usage.prompt_tokens_details.cached_tokens``), None where it reports none. Plain
records with no import from the package, so reading a stored result loads them (the sessions body,
``accelbench.sessions.body``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accelbench.served_accuracy import EndpointAccuracy, put_accuracy, read_accuracy


@dataclass(frozen=True, slots=True)
class TurnFigures:
    """The turns of one number (the k-th turn of every session) at a load point."""

    turn: int
    turns: int
    """How many sessions reached this turn with an ok reply."""
    context_tokens_p50: float
    ttft_p50_s: float
    tpot_p50_s: float

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TurnFigures:
        """Inverse of ``dataclasses.asdict``."""
        return cls(**data)


@dataclass(frozen=True, slots=True)
class SessionPoint:
    """The figures of one load: ``sessions`` sessions running at once, or (``rate_per_s`` set) arriving at
    that rate, each turn after its delay."""

    sessions: int
    turns: int
    """Turns sent (failed ones included)."""
    failed_turns: int
    duration_s: float
    """The point's span: its first request's issue to its last request's end, the audit requests it sent
    included (points stored before ``audit_output_tokens``: its turns' alone)."""
    ttft_p50_s: float
    ttft_p90_s: float
    tpot_p50_s: float
    tpot_p90_s: float
    session_latency_p50_s: float
    """A session's first issue to its last end (think delays included), median over the sessions."""
    session_latency_p90_s: float
    e2e_interactivity_tokens_per_s: float
    """MLPerf Endpoints' ``e2e_interactivity``: output tokens over the summed turn times (issue to end
    of each turn; think delays excluded), over every ok turn of the point."""
    input_tokens_per_s: float
    """Context tokens sent (every turn's whole conversation, and the audit requests') over the span: the
    server's rate at this load (points stored before ``audit_output_tokens``: the turns' alone)."""
    output_tokens_per_s: float
    """Output tokens over the span, the turns' and the audit requests' (the server's rate at this load:
    the audits' requests hold slots of the point's N and are answered like any; stop 63 read the turns
    alone at 0.45 of AIPerf's rate on one server at 4 sessions x 4 turns, with the audits' 0.84); points
    stored before ``audit_output_tokens``: the turns' alone."""
    tokens_per_s_per_user: float
    """1 / TPOT p50: the decode speed a session sees."""
    input_tokens: int
    """The turns' context tokens (the audit requests' are ``audit_input_tokens``)."""
    output_tokens: int
    """The ok turns' output tokens (the audit requests' are ``audit_output_tokens``)."""
    cached_tokens: int | None
    """The server's reported prefix-cache tokens, summed (None: it reported none)."""
    by_turn: tuple[TurnFigures, ...]
    """TTFT and TPOT by turn number, with the context each turn had: the figures against context length."""
    goodput_turns_per_s: float | None = None
    """Ok turns within the per-turn SLO (``SessionFigures.turn_slo_*``, the curve's goodput bounds) per
    second of the point's span; None in points stored before it was measured."""
    good_sessions: int | None = None
    """Sessions whose every turn was ok and within the per-turn SLO (None: stored before)."""
    energy_j: float | None = None
    """What the point's window consumed (``accelbench.endpoint.energy``, as a curve point's); None: not
    measured (a remote server, no meter, or a point stored before)."""
    energy_provenance: str = ""
    """``measured`` or ``estimated`` (empty without energy)."""
    rate_per_s: float | None = None
    """A rate point (``--session-rate``): the offered session arrival rate, sessions per second (its
    ``sessions``: the sessions it started); None: a point of ``sessions`` at once."""
    achieved_rate_per_s: float | None = None
    """A rate point: the sessions it started after the first over the time from the first start to the
    last, on the client's clock."""
    peak_in_flight: int | None = None
    """A rate point: the most sessions in flight at once."""
    behind: str = ""
    """A rate point that fell behind (a session due while the cap's sessions were in flight): why it
    stopped starting sessions; "" otherwise."""
    audit_input_tokens: int | None = None
    """Context tokens the point's audit requests sent (the forbidden-reuse audits' altered pairs, decoys
    and their controls) while its sessions ran: prefill a server's prefix cache stores beside the
    sessions' ``input_tokens``, and on a small cache can evict their history (docs/sessions.md); None:
    a point stored before it was counted."""
    audit_output_tokens: int | None = None
    """Output tokens of the point's ok audit requests: counted in the point's rates and in the energy and
    cost per token, since the server spent its window on them too; None: a point stored before (its
    rates, span and energy per token were the turns' alone)."""

    @property
    def served_output_tokens(self) -> int:
        """Every output token the server gave in the point's span: the turns' and the audit requests'."""
        return self.output_tokens + (self.audit_output_tokens or 0)

    @property
    def sessions_share(self) -> float:
        """The turns' share of the point's output tokens (1.0 without audit tokens): the part of the span's
        energy and cost that is the sessions' (``joules_per_session``, ``report.sessions``)."""
        served = self.served_output_tokens
        return self.output_tokens / served if served > 0 else 1.0

    @property
    def joules_per_output_token(self) -> float | None:
        """The point's energy over every output token it gave, the audit requests' included (None: no
        energy or no token)."""
        if self.energy_j is None or self.served_output_tokens <= 0:
            return None
        return self.energy_j / self.served_output_tokens

    @property
    def joules_per_session(self) -> float | None:
        """The sessions' share of the point's energy (``sessions_share``) over its sessions (None: no
        energy)."""
        return None if self.energy_j is None else self.energy_j * self.sessions_share / self.sessions

    def to_dict(self) -> dict[str, Any]:
        """The stored point (the goodput keys left out where not measured, as in points stored before)."""
        document = dataclasses.asdict(self)
        document["by_turn"] = [dataclasses.asdict(t) for t in self.by_turn]
        optional = ("goodput_turns_per_s", "good_sessions", "energy_j", "rate_per_s", "audit_input_tokens")
        for name in (*optional, "audit_output_tokens"):
            if document[name] is None:
                del document[name]
        for name in ("energy_provenance", "behind"):
            if not document[name]:
                del document[name]
        if self.rate_per_s is None:  # a closed-loop point: stored as before rate points were
            del document["achieved_rate_per_s"], document["peak_in_flight"]
        return document

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SessionPoint:
        """Inverse of ``to_dict``."""
        values = dict(data)
        values["by_turn"] = tuple(TurnFigures.from_dict(t) for t in values["by_turn"])
        return cls(**values)


@dataclass(frozen=True, slots=True)
class ReuseFigures:
    """The reuse probe (``accelbench.sessions.reuse``): drawn turns sent again one at a time with their
    own history (``warm``) and as a fresh session (``cold``, a new salt), the TTFT drop between them."""

    pairs: int
    context_tokens_p50: float
    warm_ttft_p50_s: float
    cold_ttft_p50_s: float
    ttft_drop: float
    """1 - warm / cold TTFT p50: the share of the TTFT a reused prefix saves (0: none; below 0: slower)."""
    warm_cached_tokens: int | None
    """The server's reported cached tokens over the warm sends (None: it reports none)."""
    cold_cached_tokens: int | None


@dataclass(frozen=True, slots=True)
class SessionFigures:
    """The ``generation`` section of a sessions cell: the session ladder and how it was made."""

    endpoint: str
    """The endpoint stack (``llm@url``, ``llm@transformers-cb``, ...)."""
    model: str
    params: int
    workload: str
    """The session workload (``synthetic-agentic``) and its drawn sizes, stated."""
    turns_per_session: int
    max_tokens: int
    shared_prefix_tokens: int
    """The declared shared prefix (the system message, chat template included), client-counted; a
    replayed trace's longest (its shared ``hash_ids`` blocks after the system message)."""
    sessions_ladder: tuple[SessionPoint, ...]
    turns_file: str
    """``turns.jsonl``: relative to the run folder when inside it."""
    duration_s: float
    reuse: ReuseFigures | None = None
    """The reuse probe after the ladder (None: not run, the ladder stopped)."""
    prefix_cache: str = ""
    """The server's prefix cache as its kind declares it (``accelbench.endpoint.servers.prefix_cache``):
    a cache-on figure is never set beside a cache-off one unlabelled; "" in sections stored before it."""
    turn_slo_ttft_s: float = 0.0
    """The per-turn SLO of the points' goodput: a turn's TTFT at most this (the workload's bound scaled
    to the model, as the curve's goodput: ``generation.loadgen_tokens.scaled_bounds``); 0.0: stored before."""
    turn_slo_tpot_s: float = 0.0
    """... and its TPOT at most this."""
    energy_note: str = ""
    """What the points' energy is (the meter and what it counts), or why there is none; "" before."""
    accuracy: EndpointAccuracy | None = None
    """The inline accuracy check (``accelbench.sessions.accuracy``): the judged turns' shares of the fp32
    reference's replies; None: no turn was judged, or a section stored before it was built."""

    def to_dict(self) -> dict[str, Any]:
        """The stored ``generation`` section."""
        document = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        document["sessions_ladder"] = [p.to_dict() for p in self.sessions_ladder]
        document["reuse"] = None if self.reuse is None else dataclasses.asdict(self.reuse)
        if not self.turn_slo_ttft_s and not self.turn_slo_tpot_s:
            del document["turn_slo_ttft_s"], document["turn_slo_tpot_s"]  # as sections stored before
        if not self.energy_note:
            del document["energy_note"]
        put_accuracy(document, self.accuracy)
        return document

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> SessionFigures:
        """A stored sessions ``generation`` section."""
        values = dict(document)
        values["sessions_ladder"] = tuple(SessionPoint.from_dict(p) for p in values["sessions_ladder"])
        reuse = values.get("reuse")
        values["reuse"] = None if reuse is None else ReuseFigures(**reuse)
        values["accuracy"] = read_accuracy(values)
        return cls(**values)
