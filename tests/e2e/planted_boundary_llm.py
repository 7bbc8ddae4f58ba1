"""A planted generating stack that searches everything its process can reach for the harness's secrets.

``planted-generating-reader`` answers honestly (torch-eager), and at ``prepare`` and every
``SEARCH_EVERY`` calls it searches: the garbage collector's objects (and the tuples they hold) and
every thread's frames for the tokens driver's objects (``CellSpec``, the prompt feed and its salts, the
reference replies, LoadGen's SUT) and for token sequences; the environment; every ancestor's
``/proc/PID/{environ,maps,mem,fd,cwd}``; every file under the store (run folder, cache and logs). Each
call then counts whether its prompt (with its fresh content and salt) had been found before it was sent,
and whether the reply it computed (8 tokens or more) had been found before, anywhere but in its own
earlier replies: a reference reply. It writes what it found to ``found.json`` in its scratch folder,
each search's seeds with its time (``tests/e2e/test_boundary.py``).
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from accelbench.generation.base import GenerationContext, Generator
from accelbench.generation.models import LlmModel
from accelbench.generation.torch_stacks import TorchEager
from tests.e2e.planted_boundary import SEED_WORDS, _search_processes

HARNESS_TYPES = (
    "CellSpec",
    "PromptFeed",
    "TokenFeeds",
    "SaltPlace",
    "Sent",
    "Reference",
    "PromptSet",
    "TokenFigures",
    "_TokenSut",
    "_Measured",
    "Agreement",
)
SEARCH_EVERY = 25
MIN_SEQUENCE = 4
"""Token sequences shorter than this are not kept (small tuples of ints are everywhere)."""
MIN_REPLY = 8
"""Replies shorter than this are not looked for (two short replies to different prompts can agree)."""
READ_BYTES = 1 << 20


class _Reader(Generator):
    """torch-eager's generator, and the search around each call."""

    def __init__(self, inner: Generator, store: Path) -> None:
        self.inner = inner
        self.precision, self.weight_format = inner.precision, inner.weight_format
        self.conversion_s, self.details = inner.conversion_s, inner.details
        self.store = store
        self.sequences: set[tuple[int, ...]] = set()
        self.own: set[tuple[int, ...]] = set()
        """What it was sent and what it replied: not a find."""
        self.sent: list[tuple[int, ...]] = []
        self.found: dict[str, Any] = {
            "harness_objects": [],
            "environment": sorted(n for n in os.environ if n.startswith("ACCELBENCH_")),
            "calls": 0,
            "calls_found_before": 0,
            "replies_checked": 0,
            "replies_found_before": 0,
            "sent_found": 0,
            "vault_listed": [],
            "files_read": 0,
            "snapshots": [],
        }
        self.search()

    def search(self) -> None:
        """One search of memory, processes and files; its findings written to ``found.json``."""
        seeds: list[str] = []
        self._memory(seeds)
        self._files(seeds)
        self.found["seeds"] = seeds
        _search_processes(self.found)
        self.found["sent_found"] = sum(p in self.sequences for p in self.sent)
        self.found["sequences"] = len(self.sequences)
        snapshot = {"time": time.time(), "call": self.found["calls"], "seeds": sorted(set(seeds))}
        self.found["snapshots"].append(snapshot)
        (Path.cwd() / "found.json").write_text(json.dumps(self.found, sort_keys=True))

    def _memory(self, seeds: list[str]) -> None:
        objects = gc.get_objects()
        for frame in sys._current_frames().values():
            while frame is not None:
                objects.extend(frame.f_locals.values())
                frame = frame.f_back  # type: ignore[assignment]
        for obj in objects:
            kind = type(obj).__name__
            if kind in HARNESS_TYPES and kind not in self.found["harness_objects"]:
                self.found["harness_objects"].append(kind)
            if isinstance(obj, dict) and "input_seed" in obj:
                seeds.append(str(obj["input_seed"]))
            self._keep(obj)
            if isinstance(obj, (list, dict)) or hasattr(obj, "__dict__"):
                for inner in gc.get_referents(obj):  # tuples of ints are not tracked by the collector
                    if isinstance(inner, tuple):
                        self._keep(inner)

    def _keep(self, obj: Any) -> None:
        if isinstance(obj, np.ndarray) and obj.ndim == 1 and obj.dtype.kind in "iu":
            if MIN_SEQUENCE <= obj.size <= 4096:
                self.sequences.add(tuple(int(t) for t in obj))
        elif isinstance(obj, (list, tuple)) and MIN_SEQUENCE <= len(obj) <= 4096 and _ints(obj):
            self.sequences.add(tuple(obj))

    def _files(self, seeds: list[str]) -> None:
        for folder, _, files in os.walk(self.store):
            if Path(folder).name.startswith(".loadgen-vault"):
                self.found["vault_listed"].append(folder)
            for name in files:
                try:
                    with open(Path(folder) / name, "rb") as file:
                        text = file.read(READ_BYTES)
                except OSError:
                    continue
                self.found["files_read"] += 1
                seeds.extend(m[1].decode() for m in SEED_WORDS.findall(text))
                if name.endswith(".json"):
                    self._json_sequences(text)

    def _json_sequences(self, text: bytes) -> None:
        try:
            document = json.loads(text)
        except ValueError:
            return
        for found in _int_lists(document):
            self._keep(found)

    def _run(self, prompt: Sequence[int], max_new_tokens: int, first: Callable[[int], None]) -> list[int]:
        self.found["calls"] += 1
        key = tuple(int(t) for t in prompt)
        if key in self.sequences - self.own:
            self.found["calls_found_before"] += 1
        if self.found["calls"] % SEARCH_EVERY == 1:
            self.search()
        tokens = self.inner._run(prompt, max_new_tokens, first)
        reply = tuple(tokens)
        if len(reply) >= MIN_REPLY:
            self.found["replies_checked"] += 1
            self.found["replies_found_before"] += reply in self.sequences - self.own
        self.own |= {key, reply}
        self.sent.append(key)
        return tokens


def _ints(items: Sequence[Any]) -> bool:
    return all(type(t) is int for t in items)


def _int_lists(document: Any) -> Iterable[list[int]]:
    """Every list of ints in a JSON document."""
    if isinstance(document, list):
        if document and all(type(t) is int for t in document):
            yield document
            return
        for item in document:
            yield from _int_lists(item)
    elif isinstance(document, dict):
        for item in document.values():
            yield from _int_lists(item)


class GeneratingHarnessReader(TorchEager):
    """Honest torch-eager generation, plus the search."""

    name: ClassVar[str] = "planted-generating-reader"

    def prepare(self, model: LlmModel, ctx: GenerationContext) -> Generator:
        store = Path.cwd().parents[3]  # <store>/runs/<run>/cells/<cell>/sut
        return _Reader(super().prepare(model, ctx), store)


class _AheadSender(Generator):
    """torch-eager's generator, which after each reply has a thread forge the next call's first frames on
    the SUT process's own socket (found through the garbage collector), the call number being the one
    it just answered (the next one cannot be known)."""

    def __init__(self, inner: Generator) -> None:
        self.inner = inner
        self.precision, self.weight_format = inner.precision, inner.weight_format
        self.conversion_s, self.details = inner.conversion_s, inner.details

    def _run(self, prompt: Sequence[int], max_new_tokens: int, first: Callable[[int], None]) -> list[int]:
        import socket
        import threading

        from accelbench.sut import wire

        frame = sys._getframe()
        while frame is not None and "call" not in frame.f_locals:
            frame = frame.f_back  # type: ignore[assignment]
        call = frame.f_locals["call"] if frame is not None else 0
        tokens = self.inner._run(prompt, max_new_tokens, first)
        sockets = [s for s in gc.get_objects() if isinstance(s, socket.socket) and s.fileno() >= 0]

        def forge() -> None:
            time.sleep(0.05)  # after the honest reply went out
            for sock in sockets:
                wire.send(sock, {"ok": True, "call": call, "received": True})
                wire.send(sock, {"ok": True, "call": call, "first": tokens[0]})

        threading.Thread(target=forge, daemon=True).start()
        return tokens


class AheadSender(TorchEager):
    """Honest replies, and first frames forged ahead of the next call."""

    name: ClassVar[str] = "planted-ahead-sender"

    def prepare(self, model: LlmModel, ctx: GenerationContext) -> Generator:
        return _AheadSender(super().prepare(model, ctx))
