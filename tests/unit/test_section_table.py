"""The report's table frame (``titled_table``) and the one-section table (``section_table``)."""

from __future__ import annotations

from accelbench.head import Head
from accelbench.report.section_table import section_table, titled_table
from accelbench.report.sessions import TURN_COLUMNS
from accelbench.results import Cell, Result


def test_the_frame_aligns_the_named_columns_left_and_the_figures_right() -> None:
    table = titled_table("Figures", ("stack", "p50 ms", "reasons", "QPS"), ("stack", "reasons"))
    assert table.title == "Figures" and table.title_justify == "left"
    assert [(c.header, c.justify) for c in table.columns] == [
        ("stack", "left"),
        ("p50 ms", "right"),
        ("reasons", "left"),
        ("QPS", "right"),
    ]
    assert table.row_count == 0


def test_the_turn_table_keeps_its_columns_in_order_with_the_stack_alone_left() -> None:
    table = titled_table("turns", TURN_COLUMNS, ("stack",))
    assert [c.header for c in table.columns] == list(TURN_COLUMNS)
    assert [c.justify for c in table.columns] == ["left"] + ["right"] * (len(TURN_COLUMNS) - 1)


def test_a_section_table_has_a_row_per_result_holding_the_section_in_cell_order() -> None:
    results = [
        Result("r1", Cell("resnet50", "tvm", "offline"), Head("ok", "b")),
        Result("r1", Cell("bert-base", "tvm", "offline"), Head("ok", "a")),
        Result("r1", Cell("minilm-l6", "tvm", "offline"), Head("crashed", "")),
    ]
    table = section_table(
        results,
        lambda r: r.head.reason or None,
        "reasons",
        ("workload", "reason"),
        ("workload",),
        lambda r, reason: [r.cell.workload, reason],
    )
    assert table is not None and table.row_count == 2
    assert list(table.columns[0].cells) == ["bert-base", "resnet50"]
    assert list(table.columns[1].cells) == ["a", "b"]
    assert section_table(results, lambda r: None, "none", ("x",), (), lambda r, s: []) is None
