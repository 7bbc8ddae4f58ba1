"""Results that travel: a run's bundle (``collect``, ``archive``, ``signing``), checked by ``verify``.

``write_bundle`` writes one archive of a stored run; ``read_archive`` + ``verify`` check one without
trusting its documents. The format is described in ``docs/bundles.md``.
"""

from __future__ import annotations

from accelbench.bundle.archive import Archive, read_archive
from accelbench.bundle.verify import Finding, Verification, verify
from accelbench.bundle.writing import write_bundle

__all__ = ["Archive", "Finding", "Verification", "read_archive", "verify", "write_bundle"]
