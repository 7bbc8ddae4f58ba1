"""MLPerf Training history: the bundled ResNet-50 series, and imports of CSV rows and result logs.

history.py   HistoryEntry, ids, validation of rows, the bundled table
logs.py      result_*.txt in the v0.5 / v0.6 / v0.7+ formats -> olympic mean
importer.py  import into a store (``<store>/mlperf_history.json``), load bundled + imported
"""

from accelbench.mlperf.history import History, HistoryEntry, bundled_history
from accelbench.mlperf.importer import LogImport, import_csv, import_logs, load_history

__all__ = [
    "History",
    "HistoryEntry",
    "LogImport",
    "bundled_history",
    "import_csv",
    "import_logs",
    "load_history",
]
