"""Faulty plugin stacks for the reliability tests, and ``python -m tests.e2e.faulty ARGS``: the accelbench
CLI with the planted (``tests.e2e.planted``) and faulty stacks registered, as a plugin would add them.

Each fault must end in its own status and reason while the other cells of the run are stored:
an exception in the session's ``infer`` (``faulty-infer-raise``) or in its teardown (``faulty-teardown``),
an output of the wrong shape (``faulty-shape``) or dtype (``faulty-dtype``), memory grown past the
cell's limit (``faulty-memory``) and megabytes written to stdout and stderr (``faulty-chatty``).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from accelbench.stacks.base import CellContext, ModelSpec, Session
from tests.e2e.planted import Infer, _eager, _Planted, _Wrapped


class InferRaiseStack(_Planted):
    """Prepares fine, then raises on the first inference."""

    name = "faulty-infer-raise"

    def prepare(self, model: Any, spec: ModelSpec, ctx: CellContext) -> Session:
        def infer(inputs: tuple[Any, ...]) -> Any:
            raise ValueError("planted infer failure")

        return Session(infer=infer, effective_precision="fp32", compile_s=0.0)


class WrongShapeStack(_Wrapped):
    """Returns the model's output with one extra column."""

    name = "faulty-shape"

    def wrap(self, run: Infer) -> Infer:
        import numpy as np

        def infer(inputs: tuple[Any, ...]) -> Any:
            out = run(inputs)
            return np.concatenate([out, out[..., :1]], axis=-1)

        return infer


class WrongDtypeStack(_Wrapped):
    """Returns the model's output as int64 (truncated), claiming fp32."""

    name = "faulty-dtype"

    def wrap(self, run: Infer) -> Infer:
        return lambda inputs: run(inputs).astype("int64")


class MemoryStack(_Planted):
    """Allocates (and touches) 64 MiB more every 50 ms while preparing, without end."""

    name = "faulty-memory"

    def prepare(self, model: Any, spec: ModelSpec, ctx: CellContext) -> Session:
        hoard = []
        while True:
            hoard.append(bytearray(64 << 20))
            time.sleep(0.05)


class ChattyStack(_Planted):
    """Writes 8 MiB to stdout and 8 MiB to stderr while preparing, then runs the real model."""

    name = "faulty-chatty"

    def prepare(self, model: Any, spec: ModelSpec, ctx: CellContext) -> Session:
        line = "x" * 1023 + "\n"
        for _ in range(8 * 1024):
            sys.stdout.write(line)
            sys.stderr.write(line)
        sys.stdout.flush()
        sys.stderr.flush()
        return Session(infer=_eager(model), effective_precision="fp32", compile_s=0.0)


class TeardownStack(_Wrapped):
    """Runs the real model; its session raises when torn down (garbage-collected at the cell's end)."""

    name = "faulty-teardown"

    def wrap(self, run: Infer) -> Infer:
        return _Teardown(run)


class _Teardown:
    def __init__(self, run: Infer) -> None:
        self.run = run

    def __call__(self, inputs: tuple[Any, ...]) -> Any:
        return self.run(inputs)

    def __del__(self) -> None:
        os.write(2, b"faulty-teardown: releasing the device\n")
        raise RuntimeError("planted teardown failure")


FAULTY = {
    "faulty-infer-raise": "tests.e2e.faulty:InferRaiseStack",
    "faulty-shape": "tests.e2e.faulty:WrongShapeStack",
    "faulty-dtype": "tests.e2e.faulty:WrongDtypeStack",
    "faulty-memory": "tests.e2e.faulty:MemoryStack",
    "faulty-chatty": "tests.e2e.faulty:ChattyStack",
    "faulty-teardown": "tests.e2e.faulty:TeardownStack",
}


def register() -> None:
    """Add the planted and faulty stacks to this process's stack table."""
    from accelbench import registry
    from tests.conftest import PLANTED

    table = {**registry.STACKS, **PLANTED, **FAULTY}
    registry.STACKS = table  # type: ignore[misc]
    registry._BUILTIN["stack"] = table


if __name__ == "__main__":
    register()
    from accelbench.cli import main

    sys.argv[0] = "accelbench"
    main()
