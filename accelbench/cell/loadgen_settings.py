"""The ``loadgen`` driver's settings (``accelbench.cell.inference``): the run's knobs its cells read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from accelbench.cellspec import CellSpec
from accelbench.errors import UserError
from accelbench.inputs import check_names, range_problem
from accelbench.knobs import knob
from accelbench.settings import KnobsAlone, expect, knob_values

if TYPE_CHECKING:  # config loads this record at run time (its knobs): no import back at run time
    from accelbench.config import RunConfig


def _batch_problem(value: Any) -> str | None:
    """``--batch``: at least 1, within its stated range (``inputs.RANGES``); None: the stack's default."""
    if isinstance(value, int) and not isinstance(value, bool) and value < 1:
        return "batch sizes must be at least 1"
    return range_problem("batch", value)


def _sweep_problem(values: Any) -> str | None:
    """``--batch-sweep``: every batch a valid ``--batch``."""
    return next((p for b in values if (p := _batch_problem(b))), None)


def _batches(text: str) -> tuple[int, ...] | None:
    """``--batch-sweep 1,2,4`` as numbers; UserError for anything else."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise UserError("an empty list was given")
    try:
        return tuple(int(name) for name in check_names(names)) or None
    except ValueError:
        raise UserError(f"--batch-sweep takes comma-separated whole numbers, got {text!r}") from None


@dataclass(frozen=True, slots=True)
class LoadgenSettings(KnobsAlone):
    """How a LoadGen cell is run (``accelbench.settings``)."""

    driver: ClassVar[str] = "loadgen"

    batch: int | None = knob(
        None, flag="--batch", help="Samples per call, offline/multi-stream.", check=_batch_problem
    )
    """Samples per call of offline and multi-stream cells; None: the stack's default."""
    batch_sweep: tuple[int, ...] = knob(
        (),
        flag="--batch-sweep",
        help="Batches to sweep, e.g. 1,2,4,8 (best verified).",
        parse=_batches,
        check=_sweep_problem,
    )
    """Batch sizes to sweep before the scored trials (offline, multi-stream); the best verified runs."""
    serve_url: str | None = None
    """The remote v2 server of the ``<stack>@url`` stacks (``--serve-url``), else None."""
    serve_cluster: str | None = None
    """The Ray cluster of the Ray Serve stacks (``--serve-cluster``), else None (a local Ray)."""

    @classmethod
    def from_config(cls, config: RunConfig) -> LoadgenSettings:
        """The settings the run ``config`` asks for."""
        return cls(
            **knob_values(cls, config),
            serve_url=config.served.url,
            serve_cluster=config.served.cluster,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LoadgenSettings:
        """Inverse of ``to_dict``."""
        return cls(**{**data, "batch_sweep": tuple(data.get("batch_sweep", ()))})

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form."""
        return asdict(self)


def loadgen_settings(spec: CellSpec) -> LoadgenSettings:
    """The settings of the LoadGen cell ``spec`` (TypeError when it was given another driver's)."""
    return expect(spec.settings, LoadgenSettings)
