"""Text of ``accelbench verify`` (one line per checked claim, then the verdict) and ``accelbench compare``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from accelbench.bundle import Verification
from accelbench.bundle.compare import Pairing
from accelbench.report.normalized import explanation_document, explanation_renderables

MARKS = {True: "match", False: "DIFFERS", None: "note"}


def verification_lines(verification: Verification) -> list[str]:
    """One ``MARK  WHERE  CHECK: DETAIL`` line per finding, then a closing line with the counts."""
    lines = [f"{MARKS[f.matched]:<8} {f.where}  {f.check}: {f.detail}" for f in verification.findings]
    differs = sum(f.matched is False for f in verification.findings)
    matched = sum(f.matched is True for f in verification.findings)
    notes = sum(f.matched is None for f in verification.findings)
    signed = "signed" if verification.signed else "UNSIGNED"
    verdict = "VERIFIED" if verification.passed else f"NOT VERIFIED: {differs} claim(s) differ"
    counts = f"{matched} claim(s) match, {notes} note(s)"
    lines.append(f"bundle of run {verification.run_id} ({signed}): {counts}; {verdict}")
    return lines


def comparison_document(a: str, b: str, pairings: Sequence[Pairing]) -> dict[str, Any]:
    """``compare --json``: each shared cell with both headlines and its explanation (or the refusal)."""
    cells = [
        {
            "key": p.key,
            "status": {"a": p.status_a, "b": p.status_b},
            "unverified": not p.status_a == p.status_b == "ok",
            "headline": {"a": p.headline_a, "b": p.headline_b},
            "refused": p.refused or None,
            "differences": list(p.differences),
            "explanation": explanation_document(p.explanation) if p.explanation else None,
        }
        for p in pairings
    ]
    return {"a": a, "b": b, "cells": cells}


def comparison_renderables(pairings: Sequence[Pairing]) -> list[Any]:
    """Per shared cell: a line with both headlines (and intervals), then ``explain``'s tables."""
    items: list[Any] = []
    for p in pairings:
        mark = "" if p.status_a == p.status_b == "ok" else f" UNVERIFIED ({p.status_a} / {p.status_b})"
        items.append(f"[bold]{p.key}[/bold]{mark}: A {_headline(p.headline_a)}, B {_headline(p.headline_b)}")
        if p.differences:
            items.append(f"  settings differ (in the residual): {'; '.join(p.differences)}")
        if p.explanation is None:
            items.append(f"  not compared: {p.refused}")
        else:
            items += explanation_renderables(p.explanation)
    return items


def _headline(headline: Mapping[str, Any] | None) -> str:
    if not headline or not isinstance(headline.get("value"), int | float):
        return "no LoadGen figure"
    low, high = (headline.get("ci") or (None, None))[:2]
    interval = (
        f" (95% {low:.4g}-{high:.4g})"
        if isinstance(low, int | float) and isinstance(high, int | float)
        else ""
    )
    return f"{headline['metric']} {headline['value']:.4g}{interval}"
