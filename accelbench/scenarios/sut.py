"""The system under test that LoadGen drives: it runs ``infer`` on the samples LoadGen issues and
completes them.

``Sut`` calls ``infer`` synchronously in LoadGen's issue thread, one batch at a time, in the order LoadGen
sends the samples (``batch`` samples per call, cut inside each query), and records the wall time of every
call. ``AsyncSut`` serves an ``infer`` with a ``submit(inputs, done)`` method (a served model,
``accelbench.serving``): each batch is only scheduled when LoadGen issues it and completed when its reply
arrives, so a slow reply never delays later sends (no coordinated omission). Which inputs an issued sample
stands for, and what happens to its output, is the ``Feed``'s decision; the feed observes each sample only
after it is completed, so LoadGen never times the feed's copies. An exception raised by ``infer`` is kept
in ``error`` (and ``failed`` set: the caller need not wait for LoadGen, ``accelbench.scenarios.early_end``),
and the queries are completed at once so LoadGen can finish (``accelbench.scenarios.loadgen.measure``
raises it again).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import mlperf_loadgen as lg
import numpy as np

from accelbench.scenarios import batching
from accelbench.workloads.base import Inputs

Infer = Callable[[Inputs], np.ndarray]


class Feed(Protocol):
    """What each issued sample stands for, and what happens to its output (see
    ``accelbench.scenarios.loadgen.PlainFeed``)."""

    def minimum_samples(self) -> int:
        """Samples a trial must issue at least (LoadGen's minimum counts are raised to it)."""

    def start_trial(self, guaranteed_samples: int, expected_samples: int, duration_s: float = 0.0) -> None:
        """A trial begins: LoadGen issues at least ``guaranteed_samples`` (likely ``expected_samples``)
        and runs at least ``duration_s`` (0: the count alone ends it, as offline's one query does)."""

    def sample(self, index: int) -> Inputs:
        """The inputs of the next issued sample, whose QSL index is ``index``."""

    def observe(self, index: int, latency_s: float, output: np.ndarray | None) -> None:
        """The sample just issued completed (after ``QuerySamplesComplete``)."""

    def end_trial(self) -> None:
        """The trial ended."""


class Sut:
    """The system under test: runs ``infer`` on each batch of a query and completes its samples."""

    def __init__(self, infer: Infer, feed: Feed, batch: int = 1) -> None:
        self.infer = infer
        self.feed = feed
        self.batch = batch
        self.latencies_s: list[float] = []
        self.error: BaseException | None = None
        self.failed = threading.Event()
        """Set with ``error``: LoadGen's test is then over for the caller."""

    def fail(self, error: BaseException) -> None:
        """Keep ``error`` (the first one only) and tell the waiting caller."""
        if self.error is None:
            self.error = error
        self.failed.set()

    def issue_queries(self, query_samples: Sequence[Any]) -> None:
        """LoadGen's callback: one sample (single-stream, server), 8 (multi-stream) or all (offline)."""
        for start in range(0, len(query_samples), self.batch):
            chunk = query_samples[start : start + self.batch]
            outputs, latency_s = self._run([query_sample.index for query_sample in chunk])
            kept = [np.ascontiguousarray(o) if o is not None else np.zeros(0, np.uint8) for o in outputs]
            responses = [
                lg.QuerySampleResponse(q.id, data.__array_interface__["data"][0], data.nbytes)
                for q, data in zip(chunk, kept, strict=True)
            ]
            lg.QuerySamplesComplete(responses)  # ``kept`` stays alive until this returns
            if self.error is None:
                for query_sample, output in zip(chunk, outputs, strict=True):
                    self.feed.observe(query_sample.index, latency_s, output)

    def flush_queries(self) -> None:
        """LoadGen's flush callback: nothing is buffered."""

    def _run(self, indices: list[int]) -> tuple[list[np.ndarray | None], float]:
        if self.error is None:
            try:
                inputs = batching.join([self.feed.sample(index) for index in indices], self.batch)
                start = time.perf_counter()
                output = np.asarray(self.infer(inputs))
                latency_s = time.perf_counter() - start
                rows: list[np.ndarray | None] = list(batching.split(output, len(indices), self.batch))
            except BaseException as error:  # re-raised by measure()
                self.fail(error)
            else:
                self.latencies_s.append(latency_s)
                return rows, latency_s
        return [None] * len(indices), 0.0  # finish LoadGen's queries fast; the error is raised later


class AsyncSut(Sut):
    """The SUT of a session whose ``infer`` has ``submit(inputs, done)`` (a served model): each batch is
    only scheduled in ``issue_queries``, and completed when ``done(output, error)`` is called (on the
    client's thread), so LoadGen's issue times hold however slow the replies are (no coordinated
    omission). Samples are completed as replies come; the feed observes them in issue order."""

    def __init__(self, infer: Infer, feed: Feed, batch: int = 1) -> None:
        super().__init__(infer, feed, batch)
        self.submit = infer.submit  # type: ignore[attr-defined]
        self.lock = threading.Lock()
        self.settled = threading.Condition(self.lock)
        self.issued = 0
        self.observed = 0
        self.waiting: dict[int, list[tuple[int, float, np.ndarray | None]]] = {}

    def issue_queries(self, query_samples: Sequence[Any]) -> None:
        """Schedule each batch of the query; nothing waits for a reply here."""
        for start in range(0, len(query_samples), self.batch):
            chunk = list(query_samples[start : start + self.batch])
            with self.lock:
                number = self.issued
                self.issued += 1
                try:  # after an error the feed is left alone: the caller may be ending its trial
                    if self.error is None:
                        inputs = batching.join([self.feed.sample(q.index) for q in chunk], self.batch)
                except BaseException as error:
                    self.fail(error)
            if self.error is not None:
                self._complete(number, chunk, None, 0.0)
                continue
            self.submit(inputs, self._done_callback(number, chunk, time.perf_counter()))

    def _done_callback(
        self, number: int, chunk: list[Any], start: float
    ) -> Callable[[np.ndarray | None, BaseException | None], None]:
        def done(output: np.ndarray | None, error: BaseException | None) -> None:
            latency_s = time.perf_counter() - start
            if error is not None:
                self.fail(error)
            self._complete(number, chunk, output if error is None else None, latency_s)

        return done

    def _complete(self, number: int, chunk: list[Any], output: np.ndarray | None, latency_s: float) -> None:
        rows: list[np.ndarray | None] = [None] * len(chunk)
        if output is not None and self.error is None:
            try:
                rows = list(batching.split(np.asarray(output), len(chunk), self.batch))
            except BaseException as error:
                self.fail(error)
        kept = [np.ascontiguousarray(o) if o is not None else np.zeros(0, np.uint8) for o in rows]
        responses = [
            lg.QuerySampleResponse(q.id, data.__array_interface__["data"][0], data.nbytes)
            for q, data in zip(chunk, kept, strict=True)
        ]
        with self.lock:
            if self.error is None:
                self.latencies_s.append(latency_s)
            self.waiting[number] = [(q.index, latency_s, o) for q, o in zip(chunk, rows, strict=True)]
        lg.QuerySamplesComplete(responses)  # before the feed's copies, which LoadGen must not time
        with self.lock:
            while self.observed in self.waiting:  # the feed sees samples in issue order
                for index, seconds, row in self.waiting.pop(self.observed):
                    if self.error is None:
                        self.feed.observe(index, seconds, row)
                self.observed += 1
            self.settled.notify_all()

    def settle(self, timeout_s: float = 60.0) -> None:
        """Wait until the feed has observed every issued batch (LoadGen returns once all samples are
        complete, which can be just before the last ``observe``)."""
        with self.settled:
            self.settled.wait_for(lambda: self.observed >= self.issued, timeout_s)
