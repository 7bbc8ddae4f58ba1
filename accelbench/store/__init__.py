"""The result store: SQLite (stdlib) results with indexed columns + JSON documents, and exports.

``open_store(path)`` opens or creates a store directory; ``export_results`` writes CSV or JSON.
"""

from accelbench.store.export import export_results
from accelbench.store.sqlite import DEFAULT_STORE_DIR, RunRecord, Store, open_store

__all__ = ["DEFAULT_STORE_DIR", "RunRecord", "Store", "export_results", "open_store"]
