"""The one rule by which a derived figure equals a stored one (``bundle.tolerance.same``), used by the
LoadGen figures, the server search, the served curve and the sessions ladder alike."""

from __future__ import annotations

import pytest

from accelbench.bundle.tolerance import RELATIVE, same
from accelbench.scenarios.loadgen_log import as_printed


@pytest.mark.parametrize(
    ("derived", "stored"),
    [
        (1.0, 1.0 + 0.5 * RELATIVE),  # float rounding of the same code on the same numbers
        (0, 0.0),
        (None, None),
        ("quick", "quick"),
        ([1.0, True], (1.0, True)),
        (True, True),
    ],
)
def test_the_same_figure_through_json_is_the_same(derived: object, stored: object) -> None:
    assert same(derived, stored)


@pytest.mark.parametrize(
    ("derived", "stored"),
    [
        (1.0, 1.0 + 4 * RELATIVE),
        (1.0, None),
        (None, 1.0),
        (1, True),  # a flag never equals a number
        (1.0, "1.0"),
        ([1.0, 2.0], [1.0]),
        ([1.0, 2.0], [1.0, 2.5]),
        (float("nan"), float("nan")),
    ],
)
def test_anything_else_differs(derived: object, stored: object) -> None:
    assert not same(derived, stored)


def test_a_number_as_loadgen_prints_it_only_where_asked() -> None:
    target_qps = 123.456789123
    logged = as_printed(target_qps)
    assert logged != target_qps and not same(logged, target_qps)
    assert same(logged, target_qps, as_logged=True)
    assert same([logged, False], [target_qps, False], as_logged=True)
