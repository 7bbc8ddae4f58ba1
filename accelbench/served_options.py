"""The run's served options: where the served stacks' requests go and what serves them (issue 41).

``--serve-url``, ``--serve-hardware``, ``--api-key-env`` and ``--serve-cluster`` are the run's, not one
driver's knob: the LoadGen, endpoint and sessions drivers all read them. ``RunConfig.served`` holds them
as one record; the stored configuration keeps them flat under their run-setting names (``STORED``), so a
run stored before the record reads unchanged. (``--serve`` chooses stacks: it is not stored.)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accelbench.errors import UserError

_RAY_ADDRESS = re.compile(r"^(auto|[A-Za-z0-9.\-]+:\d{1,5})$")
"""A Ray cluster as a driver joins it: its head's GCS ``HOST:PORT``, or ``auto``."""

STORED: Mapping[str, str] = {
    "serve_url": "url",
    "serve_hardware": "hardware",
    "serve_hardware_source": "hardware_source",
    "api_key_env": "api_key_env",
    "serve_cluster": "cluster",
}
"""Each run setting's name (TOML key, stored configuration key) -> its field in ``ServedOptions``."""


@dataclass(frozen=True, slots=True)
class ServedOptions:
    """Where the served stacks send their requests and what serves them."""

    url: str | None = None
    """``--serve-url``: the server (``http://host:port``) that the ``<stack>@url`` stacks send their
    requests to; accelbench neither starts nor stops it (docs/serving.md)."""
    hardware: str = ""
    """``--serve-hardware``, resolved: the ``--serve-url`` server's chips as ``CHIP x N`` (a chips-table key;
    ``accelbench.hardware.declared``); empty: unknown, and its cells have no per-chip figures."""
    hardware_source: str = ""
    """Where ``hardware`` came from: declared by the user, as text or a machine-facts file."""
    api_key_env: str = ""
    """``--api-key-env``: the environment variable with the endpoint's API key (empty:
    ``ACCELBENCH_API_KEY``); the key itself is never stored."""
    cluster: str | None = None
    """``--serve-cluster``: the Ray cluster (``HOST:PORT`` of its head, or ``auto``) where the Ray Serve
    stacks deploy their model instead of a Ray of their own (docs/serving.md)."""

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> ServedOptions:
        """The record of the run settings ``settings`` names (``STORED``'s keys; the others ignored)."""
        return cls(**{field: settings[name] for name, field in STORED.items() if name in settings})

    def to_settings(self) -> dict[str, Any]:
        """The run settings by name: the stored configuration's flat keys."""
        return {name: getattr(self, field) for name, field in STORED.items()}

    def check(self) -> None:
        """UserError (one line) for an option the run cannot use."""
        if self.api_key_env and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.api_key_env):
            raise UserError(
                f"api_key_env must be an environment variable name, got {self.api_key_env[:80]!r}"
            )
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise UserError(f"serve_url must be an http:// or https:// address, got {self.url[:80]!r}")
        if self.cluster is not None and not _RAY_ADDRESS.match(self.cluster):
            raise UserError(f"serve_cluster must be HOST:PORT or auto, got {self.cluster[:80]!r}")
        if self.hardware and self.url is None:
            raise UserError(
                "serve_hardware declares the --serve-url server's chips; --serve-url was not given"
            )
