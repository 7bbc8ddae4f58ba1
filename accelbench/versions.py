"""Installed versions of the libraries a result depends on, as recorded in ``Result.head.versions``."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, version


def installed_versions(packages: Iterable[str], missing: str | None = "not installed") -> dict[str, str]:
    """``{package: version}``; a package that is not installed maps to ``missing`` (left out when None)."""
    found: dict[str, str] = {}
    for package in packages:
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            if missing is not None:
                found[package] = missing
    return found


def with_python(packages: Iterable[str]) -> dict[str, str]:
    """The Python version and ``installed_versions(packages)``."""
    return {"python": sys.version.split()[0], **installed_versions(packages)}
