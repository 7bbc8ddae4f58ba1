"""The SUT process: the only place a stack's code runs in an inference cell.

Started by the harness (``accelbench.sut.remote``) as ``python -m accelbench.sut.host FD``, a fresh
interpreter (exec'd, not forked: it inherits no harness memory), with a scrubbed environment, a scratch
folder of its own as working directory and HOME, and one socket (``FD``) to the harness. It drops
``CAP_SYS_PTRACE`` before importing the stack, so it cannot read the (undumpable) harness processes.
It answers requests one at a time (``accelbench.sut.wire``): ``describe`` (is the stack available, does
it compute, its default batch), ``batch_reason``, ``prepare`` (build the model from the public weights
seed and prepare a session for the example batch), ``infer`` (one batch in, one output out), ``submit``
(a served session: the reply comes when the server answers) and ``close``; a generating stack's ops are
``accelbench.sut.generation_host``'s, an endpoint stack's ``endpoint_describe``. What it never gets: the
input seed, the sample sets, the audit schedule, LoadGen, the noise floor, the store. Each input crosses
when LoadGen issues it; each output crosses back as a copy, so nothing the stack does to a buffer after
it returned can reach the harness.
"""

from __future__ import annotations

import copy
import logging
import os
import socket
import sys
import threading
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from accelbench.errors import CellError, first_line
from accelbench.stacks.base import CellContext, ModelSpec
from accelbench.sut import endpoint_host, generation_host, hardening, wire
from accelbench.sut.loading import load_failure, set_torch_threads

log = logging.getLogger(__name__)


class Host:
    """The SUT process's state: one stack, its built models and its prepared sessions."""

    def __init__(self, conn: socket.socket, stack_ref: str) -> None:
        self.conn = conn
        self.stack_ref = stack_ref
        self.lock = threading.Lock()
        self.sessions: dict[int, Any] = {}
        self.models: dict[tuple[str, str, int, str], Any] = {}
        self.generators: dict[int, Any] = {}
        """A generating stack's prepared generators (``accelbench.sut.generation_host``)."""
        self._stack: Any = None

    @property
    def stack(self) -> Any:
        """The stack, instantiated at the first request that needs it (a plugin's import runs here)."""
        if self._stack is None:
            from accelbench.registry import instantiate

            self._stack = instantiate(self.stack_ref)
        return self._stack

    def reply(self, header: Mapping[str, Any], arrays: tuple[np.ndarray, ...] = ()) -> None:
        """Send a reply (under the lock: a served session's replies come from its client's threads)."""
        with self.lock:
            wire.send(self.conn, header, arrays)

    def serve(self) -> None:
        """Answer requests until the harness closes the wire or says ``exit``."""
        while True:
            try:
                message = wire.receive(self.conn)
            except wire.WireError:
                return
            op = str(message.header.get("op", ""))
            if op == "exit":
                return
            if op == "submit":
                self._submit(message)
                continue
            try:
                header, arrays = self._answer(op, message)
            except BaseException as err:  # every failure of stack code becomes a reply
                header, arrays = failure(err), ()
            for key in ("id", "call"):  # a served session's wire routes replies by id; a generation's
                if key in message.header:  # frames carry the call's number
                    header = {**header, key: message.header[key]}
            self.reply(header, arrays)

    def _answer(self, op: str, message: wire.Message) -> tuple[dict[str, Any], tuple[np.ndarray, ...]]:
        request = message.header
        if op in generation_host.OPS:
            return generation_host.answer(self, op, message), ()
        if op == "infer":
            output = self.sessions[int(request["session"])].infer(message.arrays)
            return {"ok": True}, (_output(output),)
        if op == "describe":
            return self._describe(str(request["device"])), ()
        if op == endpoint_host.OP:
            return endpoint_host.describe_stack(lambda: self.stack, str(request["device"])), ()
        if op == "warm":  # build the model while the harness draws its samples
            if self.stack.computes:
                self._model(str(request["workload_ref"]), model_spec_of(request, ()))
            return {"ok": True}, ()
        if op == "batch_reason":
            reason = self.stack.batch_reason(str(request["workload"]), int(request["batch"]))
            return {"ok": True, "reason": reason}, ()
        if op == "prepare":
            return self._prepare(request, message.arrays), ()
        if op == "details":  # read after the timed run: a served session's server timings cover it
            details = self.sessions[int(request["session"])].details
            return {"ok": True, "details": wire.texts(details)}, ()
        if op == "close":
            self._close(int(request["session"]))
            return {"ok": True}, ()
        raise ValueError(f"unknown request {op!r}")

    def _describe(self, device: str) -> dict[str, Any]:
        try:
            stack = self.stack
        except Exception as err:  # a plugin that does not even import is unavailable, not a crash
            return {"ok": True, "unavailable_reason": load_failure(err), "computes": True, "default_batch": 1}
        reason = stack.unavailable_reason(device)
        facts = {"ok": True, "unavailable_reason": reason, "computes": bool(stack.computes)}
        return {**facts, "default_batch": int(stack.default_batch(device)) if not reason else 1}

    def _prepare(self, request: Mapping[str, Any], example: tuple[np.ndarray, ...]) -> dict[str, Any]:
        spec, ctx = model_spec_of(request, example), context_of(request)
        set_torch_threads(ctx.threads)
        model = self._model(str(request["workload_ref"]), spec) if self.stack.computes else None
        session = self.stack.prepare(model, spec, ctx)
        number = len(self.sessions)
        self.sessions[number] = session
        return {
            "ok": True,
            "session": number,
            "effective_precision": str(session.effective_precision),
            "compile_s": float(session.compile_s),
            "versions": wire.texts(self.stack.versions()),
            "asynchronous": callable(getattr(session.infer, "submit", None)),
        }

    def _model(self, workload_ref: str, spec: Any) -> Any:
        """The workload's module from the public weights seed (built once, a copy per session)."""
        from accelbench import variants
        from accelbench.registry import instantiate

        key = (workload_ref, spec.size, spec.seed, spec.variant)
        if key not in self.models:
            workload = instantiate(workload_ref)
            drawn = variants.resolve(workload, spec.size, spec.variant)
            variant = drawn.variant if drawn else None
            self.models[key] = variants.build_model(workload, spec.size, spec.seed, variant)
        return copy.deepcopy(self.models[key])

    def _submit(self, message: wire.Message) -> None:
        number = int(message.header["id"])

        def done(output: np.ndarray | None, error: BaseException | None) -> None:
            if error is not None or output is None:
                self.reply({**failure(error or RuntimeError("no output")), "id": number})
                return
            try:
                self.reply({"ok": True, "id": number}, (_output(output),))
            except Exception as err:  # an output that cannot cross fails
                self.reply({**failure(err), "id": number})

        try:
            self.sessions[int(message.header["session"])].infer.submit(message.arrays, done)
        except BaseException as err:
            self.reply({**failure(err), "id": number})

    def _close(self, number: int) -> None:
        session = self.sessions.pop(number, None)
        if session is not None and callable(close := getattr(session.infer, "close", None)):
            close()


def model_spec_of(request: Mapping[str, Any], example: tuple[np.ndarray, ...]) -> ModelSpec:
    """The ``ModelSpec`` a stack is handed, from a ``prepare`` request and its example batch."""
    return ModelSpec(
        workload=str(request["workload"]),
        size=str(request["size"]),
        seed=int(request["seed"]),
        variant=str(request["variant"]),
        input_names=tuple(str(n) for n in request["input_names"]),
        example=tuple(np.array(a) for a in example),
        batch=int(request["batch"]),
    )


def context_of(request: Mapping[str, Any]) -> CellContext:
    """The ``CellContext`` a stack is handed, from a ``prepare`` request."""
    return CellContext(
        device=str(request["device"]),
        threads=int(request["threads"]),
        work_dir=Path(str(request["work_dir"])),
        cache_dir=Path(str(request["cache_dir"])),
        serve_url=request.get("serve_url"),
        serve_cluster=request.get("serve_cluster"),
    )


def _output(output: Any) -> np.ndarray:
    array = np.asarray(output)
    if array.dtype.kind not in wire.DTYPE_KINDS:
        raise TypeError(f"the stack returned an output of dtype {array.dtype} (numbers only)")
    return array


def failure(err: BaseException) -> dict[str, Any]:
    """The reply for an exception in stack code: its status and one line."""
    if isinstance(err, CellError):
        return {"ok": False, "status": err.status, "reason": str(err)[:500]}
    if isinstance(err, MemoryError):
        return {"ok": False, "status": "oom", "reason": "MemoryError in the SUT process"}
    traceback.print_exception(err)
    return {"ok": False, "status": "crashed", "reason": first_line(err)}


def main(argv: list[str]) -> int:
    """Entry point: ``FD STACK_REF``; serve the harness on the socket ``FD``."""
    hardening.die_with_parent()
    hardening.drop_capabilities()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    conn = socket.socket(fileno=int(argv[0]))
    started = time.perf_counter()
    Host(conn, argv[1]).serve()
    log.debug("SUT process served for %.1f s", time.perf_counter() - started)
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # a stack's leftover threads (a server's client pool) must not keep it alive
