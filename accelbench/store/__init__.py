"""The result store: SQLite (stdlib) results with indexed columns + JSON documents, and exports.

``open_store(path)`` opens or creates a store directory (exports are ``accelbench.report.export``).
"""

from accelbench.store.sqlite import DEFAULT_STORE_DIR, RunRecord, Store, open_store

__all__ = ["DEFAULT_STORE_DIR", "RunRecord", "Store", "open_store"]
