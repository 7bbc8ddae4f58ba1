"""Scenarios: the load patterns a cell is measured under (MLPerf LoadGen)."""
