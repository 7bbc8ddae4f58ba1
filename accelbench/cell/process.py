"""The cell process: measure one cell in a fresh interpreter and write its outcome as JSON.

Run as ``python -m accelbench.cell.process SPEC.json`` (the parent is ``accelbench.cell.isolation``,
which passes the input seed apart; run by hand, the cell reads it from its standard input).
The driver the planner chose from the workload's declaration (``CellSpec.refs.driver``, one of
``accelbench.registry.DRIVERS``) measures the cell and returns its typed ``Outcome``.
Any exception becomes a status (``unavailable``, ``unsupported``, ``oom``, ``crashed``); a hard crash
is observed by the parent.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from accelbench.cell import seeds
from accelbench.cellspec import CellSpec
from accelbench.errors import CellError, first_line
from accelbench.meters import memory
from accelbench.outcome import Outcome
from accelbench.outputs import write_json_atomic
from accelbench.registry import load


def main(argv: Sequence[str], input_seed: int | None = None, spec: Mapping[str, Any] | None = None) -> int:
    """Entry point: measure the cell described by ``spec`` (``CellSpec.to_dict``, from the runner's
    pipe), else by the spec file ``argv[0]`` (``CellSpec.public_dict``) with ``input_seed`` (None: the
    first line of standard input)."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if spec is not None:
        return _measured(CellSpec.from_dict(spec))
    seed = input_seed if input_seed is not None else seeds.checked(int(sys.stdin.readline()))
    return _measured(CellSpec.from_dict(json.loads(Path(argv[0]).read_text()), input_seed=seed))


def _measured(spec: CellSpec) -> int:
    """Measure ``spec`` and write its outcome document."""
    outcome = outcome_of(spec)
    peak_rss_bytes = max(outcome.head.peak_rss_bytes or 0, memory.peak_rss_bytes())
    head = dataclasses.replace(outcome.head, peak_rss_bytes=peak_rss_bytes)
    write_json_atomic(Path(spec.folders.result_path), dataclasses.replace(outcome, head=head).to_dict())
    return 0


def driver(spec: CellSpec) -> Callable[[CellSpec], Outcome]:
    """The driver function the planner chose for the cell (``CellSpec.refs.driver``)."""
    found: Callable[[CellSpec], Outcome] = load(spec.refs.driver)
    return found


def outcome_of(spec: CellSpec) -> Outcome:
    """The outcome of the cell; exceptions are turned into statuses."""
    try:
        return driver(spec)(spec)
    except CellError as err:
        return Outcome.failed(err.status, str(err))
    except MemoryError:
        traceback.print_exc()
        return Outcome.failed("oom", "MemoryError in the cell process")
    except Exception as err:
        traceback.print_exc()
        return Outcome.failed("crashed", first_line(err))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
