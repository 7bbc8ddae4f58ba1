"""``accelbench bundle``: one stored run written as a bundle archive, signed when a key is given."""

from __future__ import annotations

import os
from pathlib import Path

from accelbench.bundle import signing
from accelbench.bundle.archive import archive_kind, manifest_text, write_archive
from accelbench.bundle.collect import bundle_files
from accelbench.errors import UserError
from accelbench.outputs import Kind, checked_output
from accelbench.store import Store


def write_bundle(
    store: Store, run_id: str, target: Path, key: Path | None = None, force: bool = False
) -> int:
    """Write the bundle of ``run_id`` to ``target`` (signed with ``key``); the number of files in it."""
    archive_kind(target)
    _check_target(target, store.path, force)
    store.run(run_id)  # UserError naming an unknown id
    files = bundle_files(store, run_id, signed=key is not None)
    signature = signing.sign(manifest_text(files).encode(), key) if key is not None else None
    try:
        write_archive(target, files, signature)
    except OSError as exc:
        raise UserError(f"cannot write bundle {target}: {exc.strerror or exc}") from None
    return len(files)


BUNDLE_KIND = Kind("bundle", lambda head: head.startswith((b"\x1f\x8b", b"PK\x03\x04")))
"""An earlier bundle begins as a gzip or zip file does."""


def _check_target(target: Path, store: Path, force: bool) -> None:
    """``accelbench.outputs.checked_output``'s rules, and a folder that exists and is writable."""
    checked_output(target, store, BUNDLE_KIND, force)
    folder = target.resolve().parent
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise UserError(f"-o {target}: folder {folder} is missing or not writable")
