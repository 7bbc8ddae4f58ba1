"""Which kind of repetition the `duplicates` tool lists (issue 41's "duplicate pairs" acceptance): record
declarations of the same shape, records built by keyword and data tables, or repeated logic.

Usage: ``duplicates --repo accelbench --most 200 | python benchmarks/duplicate_kinds.py accelbench``
A side is record-shaped when at least 70% of its non-blank lines are a decorator, a class line,
a docstring line, a typed field (`name: T` or `name: T = default`) or a module constant; a row is
"keyword" when, counting also keyword arguments, dict-literal entries, closing brackets, string
continuations and parameter lists, both sides reach 70% (a record built by keyword, a data table, a
signature); the rest is "logic".
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROW = re.compile(r"^(D\d+) (\S+):(\d+)-(\d+) ~ (\S+):(\d+)-(\d+)(.*)$")
RECORD_LINE = [
    re.compile(r"^\s*@(dataclasses\.)?dataclass"),
    re.compile(r"^\s*class \w+(\(.*\))?:\s*$"),
    re.compile(r"^\s*[rbu]?(\"\"\"|''')"),
    re.compile(r"^\s+\w+: [^=()]+(\[.*\])?( = .*)?$"),
    re.compile(r"^[A-Z_][A-Z0-9_]*(: .+)? = "),
    re.compile(r"^\s*\w+: .*= field\("),
    re.compile(r"^\s*#"),
]
CONSTRUCTION_LINE = [
    re.compile(r"^\s+\w+=.*,$"),
    re.compile(r"^\s+\"[^\"]*\": .*,?$"),
    re.compile(r"^\s*[\]})]+,?$"),
    re.compile(r"^\s*(return |\w+ = )?[\w.]+\($"),
    re.compile(r"^\s+\w+: [\w.\[\], |]+ = \{$"),
    re.compile(r"^\s+f?\"[^\"]*\"\)?,?$"),
    re.compile(r"^\s*\w+(: [\w.\[\], |]+)?,$"),
    re.compile(r"^\s*(def \w+\($|\) -> .*:$)"),
]


def share(path: Path, first: int, last: int, patterns: list[re.Pattern[str]]) -> float:
    lines = path.read_text().splitlines()[first - 1 : last]
    body = [line for line in lines if line.strip()]
    in_doc = False
    hits = 0
    for line in body:
        quotes = line.count('"""') + line.count("'''")
        if in_doc or any(p.search(line) for p in patterns):
            hits += 1
        if quotes % 2 == 1:
            in_doc = not in_doc
    return hits / max(len(body), 1)


def main() -> None:
    root = Path(sys.argv[1])
    counts = {"record": 0, "keyword": 0, "logic": 0}
    for line in sys.stdin:
        match = ROW.match(line.strip())
        if not match:
            continue
        _, a, a1, a2, b, b1, b2, _ = match.groups()
        shares = (
            share(root / a, int(a1), int(a2), RECORD_LINE),
            share(root / b, int(b1), int(b2), RECORD_LINE),
        )
        built = (
            share(root / a, int(a1), int(a2), RECORD_LINE + CONSTRUCTION_LINE),
            share(root / b, int(b1), int(b2), RECORD_LINE + CONSTRUCTION_LINE),
        )
        kind = "record" if min(shares) >= 0.7 else "keyword" if min(built) >= 0.7 else "logic"
        counts[kind] += 1
        print(f"{kind:6} {shares[0]:.2f} {shares[1]:.2f} {line.strip()}")
    print(
        f"# record-declaration shape: {counts['record']}, keyword construction / data table / signature: "
        f"{counts['keyword']}, logic: {counts['logic']}"
    )


if __name__ == "__main__":
    main()
