"""The cell process: measure one cell in a fresh interpreter and write its outcome as JSON.

Run as ``python -m accelbench.cell.process SPEC.json`` (the parent is ``accelbench.cell.isolation``,
which passes the input seed apart; run by hand, the cell reads it from its standard input).
The scenario's driver (``DRIVERS``, keyed by scenario) measures the cell: the LoadGen scenarios
through ``accelbench.cell.inference``, ``train-to-quality`` through ``accelbench.training.measure``;
every cell of a generative workload through ``accelbench.cell.generation`` (``GENERATION_DRIVER``).
Any exception becomes a status (``unavailable``, ``unsupported``, ``oom``, ``crashed``); a hard crash
is observed by the parent.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import logging
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from accelbench.cell import seeds
from accelbench.cellspec import CellSpec, write_json_atomic
from accelbench.errors import CellError, Unsupported
from accelbench.meters import memory
from accelbench.outcome import Outcome

_LOADGEN = "accelbench.cell.inference:measure"
DRIVERS: Mapping[str, str] = {
    "single-stream": _LOADGEN,
    "multi-stream": _LOADGEN,
    "server": _LOADGEN,
    "offline": _LOADGEN,
    "train-to-quality": "accelbench.training.measure:measure",
}
"""The driver of each scenario, ``module:function`` taking the ``CellSpec``, imported when used."""


def main(argv: Sequence[str], input_seed: int | None = None) -> int:
    """Entry point: measure the cell described by the spec file ``argv[0]`` (``CellSpec.public_dict``)
    with ``input_seed`` (None: the first line of standard input)."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    seed = input_seed if input_seed is not None else seeds.checked(int(sys.stdin.readline()))
    spec = CellSpec.from_dict(json.loads(Path(argv[0]).read_text()), input_seed=seed)
    outcome = outcome_of(spec)
    peak_rss_bytes = max(outcome.head.peak_rss_bytes or 0, memory.peak_rss_bytes())
    head = dataclasses.replace(outcome.head, peak_rss_bytes=peak_rss_bytes)
    write_json_atomic(Path(spec.result_path), dataclasses.replace(outcome, head=head).to_dict())
    return 0


GENERATION_DRIVER = "accelbench.cell.generation:measure"
"""The driver of every cell of a generative workload (``accelbench.generation.workload``)."""


def driver(scenario: str, workload_ref: str = "") -> Callable[[CellSpec], Outcome]:
    """The driver function of ``scenario`` (of a generative workload: ``GENERATION_DRIVER``);
    ``Unsupported`` for a scenario without one."""
    reference = DRIVERS.get(scenario)
    if workload_ref and _generates(workload_ref):
        reference = GENERATION_DRIVER
    if reference is None:
        raise Unsupported(f"no driver for scenario {scenario!r} (known: {', '.join(DRIVERS)})")
    module, _, function = reference.partition(":")
    found: Callable[[CellSpec], Outcome] = getattr(importlib.import_module(module), function)
    return found


def _generates(workload_ref: str) -> bool:
    from accelbench.generation.workload import generates
    from accelbench.registry import instantiate

    return generates(instantiate(workload_ref))


def outcome_of(spec: CellSpec) -> Outcome:
    """The outcome of the cell; exceptions are turned into statuses."""
    try:
        return driver(spec.cell.scenario, spec.workload_ref)(spec)
    except CellError as err:
        return Outcome.failed(err.status, str(err))
    except MemoryError:
        traceback.print_exc()
        return Outcome.failed("oom", "MemoryError in the cell process")
    except Exception as err:
        traceback.print_exc()
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        return Outcome.failed("crashed", f"{type(err).__name__}: {first}"[:500])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
