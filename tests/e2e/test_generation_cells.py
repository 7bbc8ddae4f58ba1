"""The LLM decode driver on tiny-llama with planted stacks: a reply cache is disqualified, a false first
token reported before any work is disqualified (and fails TEST06), and the honest reference passes.
Runs ``accelbench.cell.generation`` in this process (the runner would give each cell a process of its
own; the verdicts are the same), each stack in a SUT process exec'd for it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from accelbench import registry
from accelbench.cell.generation import measure
from accelbench.cell.tokens_settings import TokensSettings
from accelbench.cellspec import CellSpec, Folders, Refs
from accelbench.generation.base import GenerationContext, Generator
from accelbench.generation.models import LlmModel, missing_packages
from accelbench.generation.torch_stacks import TorchEager
from accelbench.registry import GENERATING_STACKS, WORKLOADS
from accelbench.results import Cell
from tests.e2e.cli import disturbed

pytestmark = pytest.mark.skipif(bool(missing_packages()), reason=f"llm extra missing: {missing_packages()}")


class _Wrapped(Generator):
    """torch-eager's generator, with a planted behaviour in ``_run``."""

    def __init__(self, inner: Generator) -> None:
        self.inner = inner
        self.model = getattr(inner, "model", None)
        self.precision, self.weight_format = inner.precision, inner.weight_format
        self.conversion_s, self.details = inner.conversion_s, inner.details

    def _run(self, prompt: Sequence[int], max_new_tokens: int, first: Callable[[int], None]) -> list[int]:
        return self.inner._run(prompt, max_new_tokens, first)


class ReplyCache(_Wrapped):
    """Answers a prompt it has seen from a cache: first token and reply at once."""

    def __init__(self, inner: Generator) -> None:
        super().__init__(inner)
        self.seen: dict[tuple[int, ...], list[int]] = {}

    def _run(self, prompt: Sequence[int], max_new_tokens: int, first: Callable[[int], None]) -> list[int]:
        key = (*prompt, max_new_tokens)
        if key in self.seen:
            first(self.seen[key][0])
            return list(self.seen[key])
        self.seen[key] = super()._run(prompt, max_new_tokens, first)
        return list(self.seen[key])


class FalseFirstToken(_Wrapped):
    """Reports a first token that is not the reply's first (to look fast, say)."""

    def _run(self, prompt: Sequence[int], max_new_tokens: int, first: Callable[[int], None]) -> list[int]:
        first(7)
        return self.inner._run(prompt, max_new_tokens, lambda token: None)


class Planted(TorchEager):
    wrapper: type[_Wrapped]

    def prepare(self, model: LlmModel, ctx: GenerationContext) -> Generator:
        return self.wrapper(super().prepare(model, ctx))


class CachingStack(Planted):
    wrapper = ReplyCache


class LyingStack(Planted):
    wrapper = FalseFirstToken


def _measure(tmp_path: Path, stack_ref: str, name: str) -> dict[str, Any]:
    cell_dir = tmp_path / "cells" / name
    cell_dir.mkdir(parents=True)
    spec = CellSpec(
        run_id="test",
        cell=Cell("tiny-llama", name, "single-stream", "cpu", "tiny"),
        refs=Refs(WORKLOADS["tiny-llama"], stack_ref, registry.DRIVERS["tokens"]),
        rules="quick",
        threads=1,
        seed=0,
        input_seed=1,
        samples=16,
        folders=Folders(
            str(cell_dir), str(tmp_path), str(tmp_path / "cache"), str(cell_dir / "outcome.json")
        ),
        settings=TokensSettings(),
    )
    return measure(spec).to_dict()


@pytest.mark.slow
def test_honest_reference_passes_and_planted_stacks_never_rank(tmp_path: Path) -> None:
    honest = _measure(tmp_path, GENERATING_STACKS["torch-eager"], "torch-eager")
    assert honest["status"] in ("ok", "unstable") or disturbed(honest), honest["reason"]
    audits = [honest["audit"][a]["verdict"] for a in ("prefix_cache", "repeat", "first_token")]
    assert audits == ["pass"] * 3 or disturbed(honest), honest["reason"]
    assert honest["quality"]["samples_checked"] >= 16 and honest["quality"]["passed"]
    used = honest["settings"]["sut_process"]  # the stack ran in a SUT process, its CPU read from here
    assert 0 < used["in_calls_s"] <= used["cpu_s"]
    cached = _measure(tmp_path, f"{__name__}:CachingStack", "caching")
    lying = _measure(tmp_path, f"{__name__}:LyingStack", "lying")
    # a cheat measured beside outside load is unverified (never ranks); on a quiet machine, disqualified
    if not disturbed(cached):
        assert cached["status"] == "disqualified", cached["reason"]
        assert cached["reason"].startswith("repeat audit") and "prefix_cache" in cached["reason"], cached[
            "reason"
        ]
    assert cached["status"] != "ok" and cached["audit"]["prefix_cache"]["verdict"] == "fail"
    if not disturbed(lying):
        assert lying["status"] == "disqualified" and "first_token" in lying["reason"], lying["reason"]
    assert lying["status"] != "ok"
    assert not lying["generation"]["checks"]["test06"]["passed"]
