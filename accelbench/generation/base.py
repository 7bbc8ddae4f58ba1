"""The generating-stack interface: a ``GenerationStack`` prepares a ``Generator`` for one language model.

A ``Generator`` runs one greedy generation per call: prefill of the prompt's token ids, then one token
at a time until EOS (kept as the reply's last token) or ``max_new_tokens``. ``generate`` calls
``on_first_token(token_id)`` as soon as the first token is known (LoadGen's ``FirstTokenComplete``
hangs on it) and returns a ``Reply`` with every token and the SUT-side times. Nothing may carry over
between calls: each call starts from an empty KV cache (a prefix cache or a cached reply would fake
the time to first token; ``accelbench.generation.quality`` checks the replies).

Adding a stack is one module with a ``GenerationStack`` subclass plus one line in
``accelbench.registry.GENERATING_STACKS``, or, outside accelbench, one entry point in the group
``accelbench.generation_stacks`` (``docs/adding-a-stack.md``). Heavy libraries are imported inside
``unavailable_reason`` and ``prepare`` only: a missing one makes the stack "unavailable: <reason>", never
a crash. A conversion step (ONNX build, IR export, GGUF write, compilation) is timed apart from
generation, in ``Generator.conversion_s``.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from accelbench.generation.models import LlmModel

FirstTokenCallback = Callable[[int], None]


@dataclass(frozen=True, slots=True)
class Reply:
    """One greedy generation: the token ids and when they came, measured by the caller's clock."""

    tokens: tuple[int, ...]
    first_token_s: float
    """Seconds from the start of ``generate`` to the first token (the SUT's time to first token)."""
    latency_s: float
    """Seconds from the start of ``generate`` to its return."""
    first_reported: int
    """The token id passed to ``on_first_token`` (TEST06: must equal ``tokens[0]``)."""
    wire_s: float = 0.0
    """Seconds until the harness read the SUT process's "received" frame, sent before any stack code ran
    (``accelbench.sut.generation_remote``): at least a round trip of the wire, more when the harness
    woke late; 0 for a generator in this process."""
    read_late: bool = False
    """The harness read the first token only after the whole reply had come (it woke late): the TTFT is
    an upper bound and the TPOT a lower one (``accelbench.sut.generation_remote``)."""

    @property
    def time_per_output_token_s(self) -> float:
        """MLPerf's TPOT of this reply: (latency - TTFT) / (tokens - 1); 0 for a one-token reply."""
        if len(self.tokens) < 2:
            return 0.0
        return (self.latency_s - self.first_token_s) / (len(self.tokens) - 1)


@dataclass(frozen=True, slots=True)
class GenerationContext:
    """Where and how a generator runs."""

    cache_dir: Path
    """Folder kept across runs: converted models (ONNX, OpenVINO IR, GGUF) and compiler caches."""
    threads: int = 1
    """Intra-op threads (1 by default: on a loaded 2-core machine 2 threads stall, see docs/llm.md)."""
    device: str = "cpu"


class Generator(ABC):
    """A prepared model that generates greedily; see the module docstring for the contract."""

    precision: str
    """Effective compute precision: ``fp32``, ``fp16``, ``bf16``, ``int8``, ``int4``."""
    weight_format: str
    """How the weights are stored: ``fp32 safetensors``, ``fp32 ONNX``, ``GGUF Q4_1``..."""
    conversion_s: float
    """Seconds of conversion or compilation spent preparing it (0 when everything came from the cache)."""
    details: Mapping[str, str]

    @abstractmethod
    def _run(self, prompt: Sequence[int], max_new_tokens: int, first: Callable[[int], None]) -> list[int]:
        """Generate greedily; call ``first(token)`` once, as soon as the first token is known."""

    def generate(
        self,
        prompt: Sequence[int],
        max_new_tokens: int,
        on_first_token: FirstTokenCallback | None = None,
    ) -> Reply:
        """Greedy reply to ``prompt`` (token ids): ends at EOS (included) or after ``max_new_tokens``."""
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
        return self._timed_reply(prompt, max_new_tokens, on_first_token)

    def _timed_reply(
        self, prompt: Sequence[int], max_new_tokens: int, on_first_token: FirstTokenCallback | None
    ) -> Reply:
        """``generate``'s reply, its arguments checked: ``_run`` timed in this process (a remote generator
        times the SUT process's reply instead)."""
        seen: list[tuple[int, float]] = []
        start = time.perf_counter()

        def first(token: int) -> None:
            seen.append((int(token), time.perf_counter() - start))
            if on_first_token is not None:
                on_first_token(int(token))

        tokens = self._run(list(prompt), max_new_tokens, first)
        latency_s = time.perf_counter() - start
        if len(seen) != 1:
            raise RuntimeError(f"{type(self).__name__} reported its first token {len(seen)} times")
        return Reply(tuple(int(t) for t in tokens), seen[0][1], latency_s, seen[0][0])


class FileGenerator(Generator):
    """A generator that runs the model file ``path`` of ``model`` with ``threads`` threads; nothing to convert
    (``conversion_s`` is 0 until the stack sets the time it spent making the file)."""

    def __init__(
        self, path: Path, model: LlmModel, threads: int, precision: str, weight_format: str, **details: str
    ) -> None:
        self.eos = model.eos_token_id
        self.precision = precision
        self.weight_format = weight_format
        self.conversion_s = 0.0
        self.details = {"path": path.name, "threads": str(threads), **details}


@dataclass(frozen=True, slots=True)
class StackFacts:
    """What a generating stack says about itself before it is prepared."""

    name: str
    precision: str
    weight_format: str
    layers: Mapping[str, str] = field(default_factory=dict)


class GenerationStack(ABC):
    """A way to generate with a language model; subclasses are listed in ``registry.GENERATING_STACKS``
    or registered as ``accelbench.generation_stacks`` entry points."""

    name: ClassVar[str]
    precision: ClassVar[str]
    weight_format: ClassVar[str]
    layers: ClassVar[Mapping[str, str]]
    """``framework``, ``compiler``, ``platform``, as for ``accelbench.stacks.base.Stack``."""

    @abstractmethod
    def unavailable_reason(self, device: str) -> str | None:
        """None when the stack can run on ``device`` here, else a one-line reason."""

    @abstractmethod
    def versions(self) -> dict[str, str]:
        """Versions of the libraries this stack uses (called only when available)."""

    @abstractmethod
    def prepare(self, model: LlmModel, ctx: GenerationContext) -> Generator:
        """Convert/compile ``model`` (cached under ``ctx.cache_dir``) and return a ready generator."""

    def file_generator(
        self, kind: type[FileGenerator], made: tuple[Path, float], model: LlmModel, ctx: GenerationContext
    ) -> Generator:
        """A ``kind`` generator over the model file ``made`` (its path, and the seconds spent writing it:
        the generator's ``conversion_s``), with this stack's precision and weight format."""
        path, conversion_s = made
        generator = kind(path, model, ctx.threads, self.precision, self.weight_format)
        generator.conversion_s = conversion_s
        return generator

    def facts(self) -> StackFacts:
        """Name, precision and weight format."""
        return StackFacts(self.name, self.precision, self.weight_format, self.layers)


def cpu_only_reason(what: str, device: str) -> str | None:
    """The reason a generating stack (named by ``what``) gives on ``device``: they are wired for cpu only."""
    return None if device == "cpu" else f"{what} is wired for cpu only, not {device}"


def stop_index(tokens: Sequence[int], eos_token_id: int) -> int:
    """The length of ``tokens`` kept by the EOS rule: up to and including the first EOS."""
    for index, token in enumerate(tokens):
        if token == eos_token_id:
            return index + 1
    return len(tokens)
