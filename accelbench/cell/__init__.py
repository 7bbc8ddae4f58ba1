"""The cell pipeline: a ``CellSpec`` in, a ``Result`` out (``pipeline.run_cell``).

The parent side (``pipeline``) records an unavailable stack without a process, or runs the cell in its
own process (``accelbench.cell.isolation``) and turns the outcome into a ``Result``. In that process
(``process``) the scenario's driver measures the cell: LoadGen's scenarios through ``inference``
(trials in fresh processes, ``trial``; disjoint sample sets, ``samples``), ``train-to-quality``
through ``accelbench.training``.
"""
