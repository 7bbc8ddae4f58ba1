"""Ed25519 signatures of a bundle's ``MANIFEST``, with a key the user holds (an OpenSSH private key file).

The ``SIGNATURE`` member is JSON: ``algorithm`` (``ed25519``), ``public_key`` (the OpenSSH public line,
``ssh-ed25519 AAAA...``), ``fingerprint`` (``SHA256:...`` as ``ssh-keygen -l`` prints it) and ``signature``
(base64 of the signature of the ``MANIFEST`` bytes). The manifest hashes every other file, so one signature
covers the bundle. A signature proves the bundle is what that key's holder wrote; whether to trust the key
is the reader's decision (``accelbench verify --trust-key``). ``cryptography`` is imported only here.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from accelbench.errors import UserError
from accelbench.files import json_text, read_bytes, read_text

ALGORITHM = "ed25519"


@dataclass(frozen=True, slots=True)
class SignatureCheck:
    """What the ``SIGNATURE`` member says and whether it holds over the manifest."""

    valid: bool
    fingerprint: str
    reason: str


def sign(manifest: bytes, key_path: Path) -> bytes:
    """The ``SIGNATURE`` member for ``manifest`` signed with the OpenSSH ed25519 key at ``key_path``."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        key = serialization.load_ssh_private_key(read_bytes(key_path, "signing key", 1 << 20), password=None)
    except OSError as exc:
        raise UserError(f"cannot read signing key {key_path}: {exc.strerror or exc}") from None
    except (ValueError, TypeError) as exc:
        raise UserError(f"signing key {key_path} is not an unencrypted OpenSSH private key: {exc}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise UserError(f"signing key {key_path} is not an ed25519 key")
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    document = {
        "algorithm": ALGORITHM,
        "public_key": public.decode(),
        "fingerprint": fingerprint(public.decode()),
        "signature": base64.b64encode(key.sign(manifest)).decode(),
    }
    return (json.dumps(document, indent=1, sort_keys=True) + "\n").encode()


def check(manifest: bytes, signature: bytes, trusted: str | None = None) -> SignatureCheck:
    """Whether ``signature`` (the member) signs ``manifest``; with ``trusted`` (an OpenSSH public line)
    it must also be that key's."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        document = json_text(signature, "SIGNATURE")
        public_line = str(document["public_key"])
        key = serialization.load_ssh_public_key(public_line.encode())
        raw = base64.b64decode(str(document["signature"]), validate=True)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        return SignatureCheck(False, "", f"SIGNATURE is not readable: {exc}")
    printed = fingerprint(public_line)
    if not isinstance(key, Ed25519PublicKey) or document.get("algorithm") != ALGORITHM:
        return SignatureCheck(False, printed, "SIGNATURE is not an ed25519 signature")
    try:
        key.verify(raw, manifest)
    except InvalidSignature:
        return SignatureCheck(False, printed, f"signature by {printed} does not match the MANIFEST")
    if trusted is not None and fingerprint(trusted) != printed:
        return SignatureCheck(
            False, printed, f"signed by {printed}, not by the trusted {fingerprint(trusted)}"
        )
    return SignatureCheck(True, printed, f"signed by {printed}" + (" (trusted)" if trusted else ""))


def fingerprint(public_line: str) -> str:
    """``SHA256:<base64>`` of an OpenSSH public key line, as ``ssh-keygen -l`` prints it."""
    parts = public_line.split()
    blob = base64.b64decode(parts[1]) if len(parts) > 1 else b""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def trusted_key(path: Path) -> str:
    """The OpenSSH public line in ``path`` (a ``.pub`` file); UserError when unreadable."""
    try:
        line = read_text(path, "public key", 1 << 20).strip().splitlines()[0]
    except (OSError, ValueError, IndexError):
        raise UserError(f"cannot read a public key line from {path}") from None
    if not line.startswith("ssh-ed25519 "):
        raise UserError(f"{path} does not hold an ssh-ed25519 public key")
    return line
