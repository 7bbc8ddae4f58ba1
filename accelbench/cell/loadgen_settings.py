"""The ``loadgen`` driver's settings (``accelbench.cell.inference``): the run's knobs its cells read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from accelbench.cellspec import CellSpec
from accelbench.config import RunConfig
from accelbench.settings import expect


@dataclass(frozen=True, slots=True)
class LoadgenSettings:
    """How a LoadGen cell is run (``accelbench.settings``)."""

    driver: ClassVar[str] = "loadgen"

    batch: int | None = None
    """Samples per call of offline and multi-stream cells (``--batch``); None: the stack's default."""
    batch_sweep: tuple[int, ...] = ()
    """Batch sizes to sweep before the scored trials (offline, multi-stream); the best verified runs."""
    serve_url: str | None = None
    """The remote v2 server of the ``<stack>@url`` stacks (``--serve-url``), else None."""
    serve_cluster: str | None = None
    """The Ray cluster of the Ray Serve stacks (``--serve-cluster``), else None (a local Ray)."""

    @classmethod
    def from_config(cls, config: RunConfig) -> LoadgenSettings:
        """The settings the run ``config`` asks for."""
        return cls(
            batch=config.batch,
            batch_sweep=tuple(config.batch_sweep),
            serve_url=config.serve_url,
            serve_cluster=config.serve_cluster,
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
