"""The SUT process's side of a generating stack (the ``tokens`` driver): its ops on the wire.

``generation_describe`` (is the stack available on the device), ``generation_prepare`` (prepare a
generator for the language model the harness built: the model's folder and facts cross as JSON, never
the prompts), ``generate`` (one prompt in; a frame saying it was received, sent before any stack code
runs, then a frame with the first token the moment the stack reports it, then a frame with every
token) and ``generation_close``. Every reply echoes the request's ``call``, a random number the
harness drew for that call (``accelbench.sut.generation_remote``): a frame sent before its request
arrived cannot carry it. No time measured here is sent: the harness times each reply on its own
clock, when the frame arrives.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from accelbench.generation.base import GenerationContext, Generator
from accelbench.generation.models import LlmModel
from accelbench.sut import wire
from accelbench.sut.loading import load_failure, set_torch_threads

OPS = frozenset({"generation_describe", "generation_prepare", "generate", "generation_close"})


class Host(Protocol):
    """What these ops use of ``accelbench.sut.host.Host``."""

    generators: dict[int, Generator]

    @property
    def stack(self) -> Any: ...

    def reply(self, header: Mapping[str, Any], arrays: tuple[np.ndarray, ...] = ()) -> None: ...


def answer(host: Host, op: str, message: wire.Message) -> dict[str, Any]:
    """The reply to a generating stack's request (``generate`` sends its first-token frame itself)."""
    request = message.header
    if op == "generation_describe":
        return describe(host, str(request["device"]))
    if op == "generation_prepare":
        return prepare(host, request)
    if op == "generate":
        return generate(host, request, message.arrays)
    host.generators.pop(int(request["generator"]), None)
    return {"ok": True}


def describe(host: Host, device: str) -> dict[str, Any]:
    """The stack's reason it cannot run on ``device`` (a stack that does not import is unavailable)."""
    try:
        stack = host.stack
    except Exception as err:
        return {"ok": True, "unavailable_reason": load_failure(err)}
    return {"ok": True, "unavailable_reason": stack.unavailable_reason(device)}


def prepare(host: Host, request: Mapping[str, Any]) -> dict[str, Any]:
    """Prepare a generator; its facts and the stack's versions go back."""
    ctx = context_of(request)
    set_torch_threads(ctx.threads)
    generator: Generator = host.stack.prepare(model_of(request["model"]), ctx)
    number = len(host.generators)
    host.generators[number] = generator
    return {
        "ok": True,
        "generator": number,
        "precision": str(generator.precision),
        "weight_format": str(generator.weight_format),
        "conversion_s": float(generator.conversion_s),
        "details": wire.texts(generator.details),
        "versions": wire.texts(host.stack.versions()),
    }


def generate(host: Host, request: Mapping[str, Any], arrays: tuple[np.ndarray, ...]) -> dict[str, Any]:
    """One greedy reply; the first token is sent the moment the stack reports it."""
    call = request["call"]
    host.reply({"ok": True, "call": call, "received": True})  # before any stack code: the wire's own time

    def first(token: int) -> None:
        host.reply({"ok": True, "call": call, "first": int(token)})

    generator = host.generators[int(request["generator"])]
    reply = generator.generate([int(t) for t in arrays[0]], int(request["max_new_tokens"]), first)
    return {"ok": True, "call": call, "tokens": [int(t) for t in reply.tokens]}


def model_document(model: LlmModel) -> dict[str, Any]:
    """``model`` as JSON (what crosses in ``generation_prepare``)."""
    return {
        "name": model.name,
        "folder": str(model.folder),
        "eos_token_id": model.eos_token_id,
        "vocab_size": model.vocab_size,
        "params": model.params,
        "description": model.description,
        "build_s": model.build_s,
        "gguf_path": str(model.gguf_path) if model.gguf_path is not None else None,
    }


def model_of(document: Mapping[str, Any]) -> LlmModel:
    """The ``LlmModel`` of ``model_document``."""
    gguf = document.get("gguf_path")
    return LlmModel(
        name=str(document["name"]),
        folder=Path(str(document["folder"])),
        eos_token_id=int(document["eos_token_id"]),
        vocab_size=int(document["vocab_size"]),
        params=int(document["params"]),
        description=str(document["description"]),
        build_s=float(document["build_s"]),
        gguf_path=Path(str(gguf)) if gguf else None,
    )


def context_request(ctx: GenerationContext) -> dict[str, Any]:
    """``ctx`` as JSON."""
    return {"cache_dir": str(ctx.cache_dir), "threads": ctx.threads, "device": ctx.device}


def context_of(request: Mapping[str, Any]) -> GenerationContext:
    """The ``GenerationContext`` of a ``generation_prepare`` request."""
    return GenerationContext(
        cache_dir=Path(str(request["cache_dir"])),
        threads=int(request["threads"]),
        device=str(request["device"]),
    )
