"""The stack in the harness's own process, as before the SUT process existed: for the boundary's cost
benchmark only (``benchmarks/sut_overhead.py`` times a cell both ways, interleaved). No run uses it: a
stack in the harness's process could read the harness's memory (``docs/audits.md``).

``InProcessSut`` answers what ``accelbench.sut.remote.SutProcess`` answers, through the SUT process's
own code (``accelbench.sut.host.Host``), without the wire; ``in_process_generator`` prepares a
generating stack's generator the same way (its replies timed by the generator's own clock, as before
the boundary).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from accelbench.generation.base import GenerationContext, Generator
from accelbench.generation.models import LlmModel
from accelbench.stacks.base import Session
from accelbench.sut import generation_host, wire
from accelbench.sut.host import Host
from accelbench.sut.remote import Prepared, StackFacts
from accelbench.workloads.base import Inputs


class InProcessSut:
    """A stack run in this process, with ``SutProcess``'s interface (no process of its own: ``pid`` 0)."""

    pid = 0

    def __init__(self, stack_ref: str) -> None:
        self.host = Host(None, stack_ref)  # type: ignore[arg-type]  # it never replies on a wire
        self.cpu_in_calls_s = 0.0

    def post(self, header: Mapping[str, Any]) -> None:
        """Nothing to overlap in one process."""

    def describe(self, device: str) -> StackFacts:
        """What the stack declares."""
        reply = self.host._describe(device)
        return StackFacts(reply["unavailable_reason"], bool(reply["computes"]), int(reply["default_batch"]))

    def batch_reason(self, workload: str, batch: int) -> str | None:
        """The stack's reason it cannot run ``batch``, or None."""
        reason: str | None = self.host.stack.batch_reason(workload, batch)
        return reason

    def prepare(self, request: Mapping[str, Any], example: Inputs) -> tuple[Session, Prepared]:
        """The stack's own session (its ``infer`` called directly)."""
        reply = self.host._prepare(request, tuple(example))
        session: Session = self.host.sessions[int(reply["session"])]
        prepared = Prepared(
            session=int(reply["session"]),
            effective_precision=str(reply["effective_precision"]),
            compile_s=float(reply["compile_s"]),
            versions=dict(reply["versions"]),
            asynchronous=bool(reply["asynchronous"]),
        )
        return session, prepared

    def cpu_s(self) -> float:
        """This process's CPU time (the harness's own included: the benchmark does not judge it)."""
        return time.process_time()

    def details(self, session: int) -> dict[str, str]:
        """The session's details, read now."""
        return wire.texts(self.host.sessions[session].details)

    def close_session(self, session: int) -> None:
        """Close the session (a served one stops its server)."""
        self.host._close(session)

    def stop(self) -> None:
        """Nothing to stop."""


def in_process_generator(stack_ref: str, model: LlmModel, ctx: GenerationContext) -> Generator:
    """The generating stack's generator prepared in this process, through the SUT process's own code."""
    host = Host(None, stack_ref)  # type: ignore[arg-type]  # it never replies on a wire
    request = {"model": generation_host.model_document(model), **generation_host.context_request(ctx)}
    number = int(generation_host.prepare(host, request)["generator"])
    generator: Generator = host.generators[number]
    return generator
