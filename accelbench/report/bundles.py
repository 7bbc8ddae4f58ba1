"""Text of ``accelbench bundle`` and ``accelbench verify``: one line per checked claim, then the verdict."""

from __future__ import annotations

from accelbench.bundle import Verification

MARKS = {True: "match", False: "DIFFERS", None: "note"}


def verification_lines(verification: Verification) -> list[str]:
    """One ``MARK  WHERE  CHECK: DETAIL`` line per finding, then a closing line with the counts."""
    lines = [f"{MARKS[f.matched]:<8} {f.where}  {f.check}: {f.detail}" for f in verification.findings]
    differs = sum(f.matched is False for f in verification.findings)
    matched = sum(f.matched is True for f in verification.findings)
    signed = "signed" if verification.signed else "UNSIGNED"
    verdict = "VERIFIED" if verification.passed else f"NOT VERIFIED: {differs} claim(s) differ"
    lines.append(f"bundle of run {verification.run_id} ({signed}): {matched} claim(s) match; {verdict}")
    return lines
