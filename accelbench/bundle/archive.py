"""A bundle's files on disk: one ``.tar.gz`` or ``.zip`` archive, with a ``MANIFEST`` of SHA-256 hashes.

Writing: ``write_archive`` takes the files (archive path -> bytes), adds ``MANIFEST`` (one line
``<sha256>  <path>`` per file, sorted by path) and, when given, ``SIGNATURE`` (``accelbench.bundle.signing``),
and writes a temporary file beside the target that is renamed over it. Reading: ``read_archive`` loads every
member into memory and refuses, with one line (``UserError``), a file that is not a readable archive, a
member that is not a plain file, a path that is absolute or climbs out (``..``), and more than
``MAX_BYTES`` in all. Nothing is extracted to disk.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import tempfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from accelbench.errors import UserError
from accelbench.files import read_bytes

MANIFEST = "MANIFEST"
SIGNATURE = "SIGNATURE"
MAX_BYTES = 1 << 30
"""Largest total of a bundle's members read into memory (1 GiB)."""
SUFFIXES = (".tar.gz", ".tgz", ".zip")


@dataclass(frozen=True, slots=True)
class Archive:
    """The files of a bundle as read: every member by its path, including ``MANIFEST`` and ``SIGNATURE``."""

    files: Mapping[str, bytes]

    def text(self, path: str) -> str:
        """A member as UTF-8 text; UserError when it is missing or not text."""
        if path not in self.files:
            raise UserError(f"bundle has no {path}")
        try:
            return self.files[path].decode()
        except UnicodeDecodeError:
            raise UserError(f"bundle member {path} is not UTF-8 text") from None


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data`` in hex."""
    return hashlib.sha256(data).hexdigest()


def manifest_text(files: Mapping[str, bytes]) -> str:
    """The ``MANIFEST`` of ``files`` (every one but ``MANIFEST`` and ``SIGNATURE``)."""
    lines = [f"{sha256_hex(data)}  {path}\n" for path, data in sorted(files.items()) if path not in _OWN]
    return "".join(lines)


def parse_manifest(text: str) -> dict[str, str]:
    """path -> hex hash of a ``MANIFEST``; UserError on a malformed line."""
    hashes: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        digest, sep, path = line.partition("  ")
        if not sep or len(digest) != 64 or not path:
            raise UserError(f"bundle MANIFEST line {number} is not '<sha256>  <path>'")
        hashes[path] = digest
    return hashes


def write_archive(target: Path, files: Mapping[str, bytes], signature: bytes | None = None) -> None:
    """Write ``files`` with their ``MANIFEST`` (and ``SIGNATURE``) to ``target`` (.tar.gz or .zip)."""
    kind = archive_kind(target)
    members = {**files, MANIFEST: manifest_text(files).encode()}
    if signature is not None:
        members[SIGNATURE] = signature
    folder = target.parent if str(target.parent) else Path(".")
    handle, temporary = tempfile.mkstemp(prefix=".accelbench-bundle-", dir=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(_packed(kind, members))
        os.chmod(temporary, 0o644)  # a bundle is meant to be shared (mkstemp makes it 0600)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def archive_kind(path: Path) -> str:
    """``tar`` or ``zip`` from the file name; UserError for another suffix."""
    name = path.name.lower()
    if name.endswith((".tar.gz", ".tgz")):
        return "tar"
    if name.endswith(".zip"):
        return "zip"
    raise UserError(f"bundle file {path} must end with one of {', '.join(SUFFIXES)}")


def read_archive(path: Path) -> Archive:
    """Every member of the bundle at ``path``; UserError (one line) when it cannot be read as one."""
    if not path.is_file():
        raise UserError(f"no bundle file at {path}")
    data = read_bytes(path, "bundle file", MAX_BYTES)
    try:
        if zipfile.is_zipfile(io.BytesIO(data)):
            return Archive(_read_zip(data))
        return Archive(_read_tar(data))
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
        raise UserError(
            f"{path} is not a readable bundle archive: {str(exc) or type(exc).__name__}"
        ) from None


_OWN = (MANIFEST, SIGNATURE)


def _packed(kind: str, members: Mapping[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    if kind == "zip":
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in sorted(members.items()):
                archive.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data)
        return buffer.getvalue()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in sorted(members.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _read_tar(data: bytes) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
        for info in archive:
            if info.isdir():
                continue
            if not info.isfile():
                raise ValueError(f"member {info.name!r} is not a plain file")
            _add(files, info.name, info.size)
            extracted = archive.extractfile(info)
            files[info.name] = extracted.read() if extracted else b""
    return files


def _read_zip(data: bytes) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            _add(files, info.filename, info.file_size)
            files[info.filename] = archive.read(info)
    return files


def _add(files: dict[str, bytes], name: str, size: int) -> None:
    """Refuse an unsafe or duplicate member name, or a bundle over ``MAX_BYTES``."""
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts or not name or name in files:
        raise ValueError(f"member {name!r} has an unsafe or repeated path")
    if sum(map(len, files.values())) + size > MAX_BYTES:
        raise ValueError(f"members exceed {MAX_BYTES} bytes")
