"""A curve point that runs until its medians are known: the extra requests after the point's first ones.

A point first sends its ``EndpointSettings.requests_at`` requests (the repeat audit's pairs among them).
Under rules with a point cap (``Rules.endpoint_point_max_s``; ``quick`` has none), it then goes on
sending, without a pause in the load, while the TTFT or TPOT median's 95% confidence interval is wider
than ``POINT_WIDTH`` of the median (``accelbench.endpoint.figures.narrow``) and the point has run less
than the cap: MLPerf Endpoints' minimum duration and LoadGen's early stopping, for a median. Every point
stores its intervals, extended or not, so a reader sees how well each median is known.

The extra prompts are the point's stream continued (``point``, concurrency, ``more``, chunk): drawn from
the cell's secret input seed like the first ones, each with its own salt, in chunks of ``CHUNK`` drawn
when first needed. A server cannot tell an extra request from a first one (same lengths, same shape);
the accuracy check rebuilds them by salt (``prompts_by_salt``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from accelbench.endpoint.client import Prompt
from accelbench.endpoint.driver import Extension
from accelbench.endpoint.figures import narrow
from accelbench.endpoint.prompts import salted, seeded_texts
from accelbench.endpoint.records import RequestRecord

POINT_WIDTH = 0.10
"""A point's medians are known when half their 95% interval is within this share of themselves."""
CHUNK = 16
MOST_PER_POINT = 4096
"""The extra requests a point may send at most, whatever its cap (a bound on the prompts drawn)."""


def extra_prompts(
    tokenizer: Any, input_seed: int, lengths: tuple[int, int], concurrency: int, chunk: int
) -> list[Prompt]:
    """The ``chunk``-th ``CHUNK`` extra prompts of the point at ``concurrency``."""
    parts = ("point", concurrency, "more", chunk)
    return salted(tokenizer, input_seed, seeded_texts(input_seed, lengths, CHUNK, *parts), *parts)


def extension(
    tokenizer: Any,
    input_seed: int,
    lengths: tuple[int, int],
    concurrency: int,
    max_s: float,
    width: float = POINT_WIDTH,
) -> Extension:
    """The extra requests of the point at ``concurrency``: wanted while its medians are wider than
    ``width`` and it has run less than ``max_s`` seconds."""
    chunks: dict[int, list[Prompt]] = {}

    def prompt(k: int) -> Prompt:
        chunk, i = divmod(k, CHUNK)
        if chunk not in chunks:
            chunks[chunk] = extra_prompts(tokenizer, input_seed, lengths, concurrency, chunk)
        return chunks[chunk][i]

    def wanted(records: Sequence[RequestRecord], elapsed_s: float) -> bool:
        return elapsed_s < max_s and not narrow(records, width)

    return Extension(prompt, wanted, MOST_PER_POINT)


def prompts_by_salt(
    tokenizer: Any, input_seed: int, lengths: tuple[int, int], concurrency: int, salts: Collection[str]
) -> dict[str, Prompt]:
    """The extra prompts of the point at ``concurrency`` whose salts are ``salts`` (its records' salts
    that are not among its first prompts'): the first ``len(salts)`` extra prompts, as they were sent."""
    found: dict[str, Prompt] = {}
    missing = set(salts)
    for chunk in range(-(-len(missing) // CHUNK)):
        if not missing:
            break
        drawn = {p.salt: p for p in extra_prompts(tokenizer, input_seed, lengths, concurrency, chunk)}
        found |= {salt: drawn[salt] for salt in missing & drawn.keys()}
        missing -= drawn.keys()
    return found
