"""The one rule by which a figure derived again from a bundle's raw files equals the figure stored.

``verify`` runs the code that made a stored figure on the raw files it was made from (LoadGen's logs, the
per-request and per-turn records): the same code on the same numbers, read back through JSON. Only float
rounding may differ, so two numbers are the same within ``RELATIVE`` of the larger; a flag (``valid``) and
anything that is not a number must be equal; lists compare element by element and must be as long; a
stored flag or text never equals a derived number. ``as_logged``: a stored number may also be the derived
one as LoadGen prints it (``scenarios.loadgen_log.as_printed``): a server's target QPS reaches its log
rounded, so a figure derived from the log is the rounded target.

``bundle.crosscheck`` keeps its own rule on purpose: it compares two files LoadGen printed with different
rounding (the summary's rates to a few decimals), not a figure with the code's own result.
"""

from __future__ import annotations

from accelbench.scenarios.loadgen_log import as_printed

RELATIVE = 1e-9
"""The same code on the same JSON numbers: only float rounding may differ."""


def same(derived: object, stored: object, as_logged: bool = False) -> bool:
    """Whether ``stored`` is ``derived`` under the module's rule."""
    if isinstance(derived, list | tuple) and isinstance(stored, list | tuple):
        return len(derived) == len(stored) and all(
            same(a, b, as_logged) for a, b in zip(derived, stored, strict=True)
        )
    if isinstance(derived, bool) or isinstance(stored, bool):
        return isinstance(derived, bool) and isinstance(stored, bool) and derived == stored
    if isinstance(derived, int | float) and isinstance(stored, int | float):
        scale = max(abs(derived), abs(stored))
        if derived == stored or abs(derived - stored) <= RELATIVE * scale:
            return True
        return as_logged and as_printed(stored) == derived
    return derived == stored
