"""Normalization: pure arithmetic over results, MLPerf history entries and chip facts.

    ranges.py    Range (low, high, central) and provenance ordering
    subjects.py  Subject: one thing that was measured (an MLPerf entry or a local result)
    factors.py   per-chip / per-transistor / per-mm² / per-watt / per-dollar figures, node credit
    cmos.py      the CMOS scaling table and the CMOS-potential model (after Fuchs & Wentzlaff 2019)
    explain.py   explain(a, b): a measured ratio as chips x transistors x node x residual
    roofline.py  achieved FLOP/s, share of the measured peak, the roofline bound (the probes' figures)
    peak_share.py  the peak a share divides by (best of every measurement), datasheet peak, suspect shares
    cell_figures.py  each stored cell's roofline and figures (CellFigures: the ``normalized`` of show --json)
    generalization.py  Goodhart gap, spread, success rate per stack (Generalization)
    expressiveness.py  the workload x stack matrix of the non-matmul workloads (Expressiveness)

Nothing here formats numbers or touches the store; rendering lives in ``accelbench.report.normalized``.
The package ``__init__`` imports nothing so that ``accelbench.hardware.chips`` can use ``ranges``.
"""
