"""The chips each served cell ran on, for the per-chip figures of served LLM curves and session ladders.

A server the cell started on this machine is matched like any cell (``normalize.cell_figures.cell_match``);
a ``--serve-url`` server is the run's ``--serve-hardware`` declaration, read from the run's stored config.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from accelbench.hardware.chips import ChipTable, load_chips
from accelbench.hardware.match import ChipMatch
from accelbench.normalize.cell_figures import cell_match
from accelbench.probe.roofline import MeasuredPeaks
from accelbench.results import Result

log = logging.getLogger(__name__)


def served_chips(
    results: Sequence[Result],
    machine: Mapping[str, Any],
    peaks: MeasuredPeaks | None,
    chips: ChipTable | None = None,
    config: Mapping[str, Any] | None = None,
) -> dict[str, ChipMatch]:
    """Per endpoint cell (a curve or a session ladder): the chips its server ran on. A server the cell
    started on this machine: matched here, the count narrowed by the measured peak. A ``--serve-url``
    server (``llm@url``): the run's ``--serve-hardware`` declaration (``config``), basis ``declared``;
    absent without one."""
    served = [r for r in results if r.curve is not None or r.session_ladder is not None]
    if not served:  # the chips table is read only when a curve needs it
        return {}
    table = chips if chips is not None else load_chips()
    declared = _declared(config or {}, table)
    matches = {
        r.cell.key: declared if r.cell.stack == "llm@url" else cell_match(r, machine, table, peaks)
        for r in served
    }
    return {key: match for key, match in matches.items() if match is not None and match.count > 0}


def _declared(config: Mapping[str, Any], chips: ChipTable) -> ChipMatch | None:
    """The run's ``--serve-hardware`` declaration as a match; None when there is none or it no longer
    names a known chip (a chips table that lost the row)."""
    from accelbench.errors import UserError
    from accelbench.hardware.declared import declared_match

    declaration = config.get("serve_hardware")
    if not declaration or not isinstance(declaration, str):
        return None
    try:
        return declared_match(declaration, str(config.get("serve_hardware_source") or "declared"), chips)
    except (UserError, ValueError) as error:
        log.warning("the run's --serve-hardware %r is not usable: %s", declaration, error)
        return None
