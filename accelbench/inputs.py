"""Untrusted inputs, bounded before they are parsed: the one place the rules live.

Files a user names (a config, a chips file, an MLPerf CSV or log, a cloud price list) are read through
``read_input``: a regular file only (a FIFO, a device such as ``/dev/zero``, a directory is refused,
checked with ``os.stat`` before opening, and again on the descriptor, which is opened with ``O_NONBLOCK``
so that a FIFO swapped in meanwhile does not block), at most ``MAX_INPUT_BYTES``. ``parse_json`` and
``parse_toml`` refuse nesting deeper than ``MAX_NESTING`` (found by a scan before the parser recurses).
Numbers: ``range_problem`` gives the stated range of an integer or float setting (``RANGES``: seeds
``0 <= seed < 2**63``, threads, batch, variants, runs, samples, timeouts finite and > 0). Every
violation is one ``UserError`` line naming the file or option and the rule (exit code 2).
"""

from __future__ import annotations

import json
import math
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from accelbench.errors import UserError

MAX_INPUT_BYTES = 64 * 2**20
"""The largest config, chips file, CSV or log accepted (the bundled ones are under 1 MiB)."""
MAX_NESTING = 64
"""The deepest nesting of arrays/objects (tables) accepted in a JSON or TOML input."""
MAX_NAME_CHARS = 128
"""The longest name accepted (run ids, stack and workload names)."""
MAX_MESSAGE_CHARS = 600
"""The longest error line the CLI prints (what a user typed is quoted in it, cut)."""
SEED_LIMIT = 2**63

RANGES: dict[str, tuple[float, float, bool]] = {
    "seed": (0, SEED_LIMIT - 1, True),
    "variant_seed": (0, SEED_LIMIT - 1, True),
    "input_seed": (0, SEED_LIMIT - 1, True),
    "threads": (0, 4096, True),
    "batch": (1, 65536, True),
    "variants": (0, 10_000, True),
    "runs": (1, 1000, True),
    "nproc": (1, 1024, True),
    "samples": (1, 10_000_000, True),
    "mem_limit_bytes": (0, 2**50, True),
    "timeout_s": (1e-3, 7 * 86400.0, False),
}
"""Per setting: (lowest, highest, integer) -- both bounds included."""
MAX_PROBE_BUDGET_S = 86400.0
"""``probe --budget-s``: at most a day (``inf`` would never end)."""


def range_problem(name: str, value: Any) -> str | None:
    """Why ``value`` is outside the stated range of the setting ``name`` (None: fine, or not bounded)."""
    if name not in RANGES or value is None:
        return None
    low, high, integer = RANGES[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{name} must be a number, got {str(value)[:40]!r}"
    if not integer and not math.isfinite(value):
        return f"{name} must be finite, got {value}"
    if not low <= value <= high:
        kind, shown = (
            ("an integer", f"{int(low)} to {int(high)}") if integer else ("a number", f"{low:g} to {high:g}")
        )
        return f"{name} must be {kind} from {shown}, got {_short(value)}"
    return None


def positive_finite(option: str, value: float, high: float = math.inf) -> None:
    """UserError unless ``0 < value <= high`` and finite (an option such as ``--budget-s``)."""
    if not (math.isfinite(value) and 0 < value <= high):
        limit = "" if math.isinf(high) else f" and at most {high:g}"
        raise UserError(f"{option} must be a finite number above 0{limit}, got {value}")


def read_input(path: Path, what: str, max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``; UserError naming ``what`` and the rule."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise UserError(f"{what} {path} is not a regular file (a directory, device or FIFO)")
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UserError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        found = os.fstat(handle)
        if not stat.S_ISREG(found.st_mode):
            raise UserError(f"{what} {path} is not a regular file (a directory, device or FIFO)")
        if found.st_size > max_bytes:
            raise UserError(f"{what} {path} is {found.st_size} bytes, more than the limit of {max_bytes}")
        data = _read_at_most(handle, max_bytes + 1)
    except OSError as exc:
        raise UserError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    finally:
        os.close(handle)
    if len(data) > max_bytes:
        raise UserError(f"{what} {path} is more than the limit of {max_bytes} bytes")
    return data


def read_input_text(path: Path, what: str, encoding: str = "utf-8") -> str:
    """``read_input`` decoded; UserError when it is not text in ``encoding``."""
    try:
        return read_input(path, what).decode(encoding)
    except UnicodeDecodeError as exc:
        raise UserError(f"{what} {path} is not {encoding} text ({exc.reason} at byte {exc.start})") from None


def parse_json(text: str, where: str) -> Any:
    """JSON nested at most ``MAX_NESTING`` deep; UserError naming ``where`` otherwise."""
    _check_nesting(text, where)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise UserError(f"{where}: invalid JSON: {_short(exc)}") from None


def parse_toml(text: str, where: str) -> dict[str, Any]:
    """TOML nested at most ``MAX_NESTING`` deep; UserError naming ``where`` otherwise."""
    _check_nesting(text, where)
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise UserError(f"{where}: invalid TOML: {_short(exc)}") from None


def _check_nesting(text: str, where: str) -> None:
    """A cheap upper bound of the nesting: the deepest run of open brackets, strings included (a
    string full of brackets is refused too, which no real input has)."""
    depth = deepest = 0
    for char in text:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(0, depth - 1)
    if deepest > MAX_NESTING:
        raise UserError(f"{where} nests more than {MAX_NESTING} levels of arrays or objects")


def check_names(names: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` when each is at most ``MAX_NAME_CHARS`` long; else UserError quoting the start of one."""
    long = [name for name in names if len(name) > MAX_NAME_CHARS]
    if long:
        raise UserError(f"name {long[0][:40]!r}... is longer than {MAX_NAME_CHARS} characters")
    return names


def one_line(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``message`` on one line, cut at ``limit`` characters (a name can be as long as a user makes it)."""
    text = " ".join(message.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _read_at_most(handle: int, limit: int) -> bytes:
    chunks, total = [], 0
    while total < limit:
        chunk = os.read(handle, min(1 << 20, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _short(value: Any) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= 80 else text[:77] + "..."
