"""The hardware of a ``--serve-url`` server, as declared by the user (it cannot be detected from here).

``--serve-hardware`` takes either a chip and count (``"NVIDIA H100 SXM x8"``, ``"CPU: AMD EPYC 9654"``:
a chips-table key, ``x N`` chips, 1 when omitted) or a machine-facts file written by ``accelbench hw
--json`` on the server (its GPUs, else its CPU share, matched here as a local machine would be). The
declaration is resolved once, when the run starts, into ``CHIP x N`` and a provenance sentence that says
it was declared and from what; both are stored with the run's configuration, and the per-chip figures
of the server's cells are marked ``declared`` (``accelbench.report.documents.served_chips``).
"""

from __future__ import annotations

import re
from pathlib import Path

from accelbench.errors import UserError
from accelbench.files import read_json
from accelbench.hardware.chips import ChipTable, load_chips
from accelbench.hardware.detect import machine_from_dict
from accelbench.hardware.match import ChipMatch, match_gpu, match_machine

_CHIP_COUNT = re.compile(r"^(?P<chip>.+?)(?:\s+[x×]\s*(?P<count>\d+(?:\.\d+)?))?$")


def resolve_declaration(text: str, chips: ChipTable | None = None) -> tuple[str, str]:
    """``(CHIP x N, provenance)`` of a ``--serve-hardware`` value; UserError (one line) when unusable."""
    table = chips or load_chips()
    value = text.strip()
    if not value:
        raise UserError("--serve-hardware: empty; give CHIP [x N] or a file from `accelbench hw --json`")
    path = Path(value).expanduser()
    if path.suffix == ".json" or path.is_file():
        return _from_file(path, table)
    found = _CHIP_COUNT.match(value)
    assert found is not None  # the pattern matches any non-empty text
    chip = table.require(found.group("chip").strip())
    count = float(found.group("count") or 1)
    if not count > 0:
        raise UserError(f"--serve-hardware {value!r}: the chip count must be positive")
    return f"{chip.key} x {count:g}", f"declared by the user (--serve-hardware {value!r}), not detected"


def declared_match(declaration: str, provenance: str, chips: ChipTable | None = None) -> ChipMatch:
    """The stored declaration as a ``ChipMatch`` whose basis is ``declared``."""
    table = chips or load_chips()
    key, _, count = declaration.rpartition(" x ")
    chip = table.require(key)
    basis = f"declared: {float(count):g} x {chip.key} ({provenance})"
    return ChipMatch(
        chip=chip,
        count=float(count),
        basis="declared",
        detected=declaration,
        notes=(provenance,),
        count_basis=basis,
    )


def _from_file(path: Path, table: ChipTable) -> tuple[str, str]:
    if not path.exists():
        raise UserError(f"--serve-hardware: no such file {str(path)!r}")
    try:
        document = read_json(path, "--serve-hardware file")
        machine = machine_from_dict({k: v for k, v in document.items() if k != "chip"})  # hw's own match
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as error:
        raise UserError(
            f"--serve-hardware {str(path)!r}: not a machine-facts file from `accelbench hw --json` ({error})"
        ) from None
    where = (
        f"machine-facts file {str(path)!r} (accelbench hw --json on the server, "
        f"fingerprint {machine.fingerprint})"
    )
    gpus = [match_gpu(gpu, table) for gpu in machine.gpus]
    known = [m for m in gpus if m.chip is not None]
    if known:
        chip = known[0].chip
        assert chip is not None
        count = sum(1 for m in known if m.chip == chip)
        return f"{chip.key} x {count}", f"declared by the user: {count} of the GPUs in the {where}"
    match = match_machine(machine, table)
    if match.chip is None:
        raise UserError(f"--serve-hardware {str(path)!r}: no known chip in it ({'; '.join(match.notes)})")
    return f"{match.chip.key} x {match.count:.6g}", f"declared by the user: the {where}; {match.count_basis}"
