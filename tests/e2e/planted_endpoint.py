"""Planted endpoint stacks (``accelbench.endpoint.facts``): one that notes where its module was imported,
to show its code runs in a SUT process and never beside the cell's secrets, and one that names a server
accelbench does not start (a server of its own choosing, with a cache no audit could see)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import ClassVar

from accelbench.endpoint.stack import EndpointStack

HARNESS_MODULES = ("accelbench.endpoint.cell", "accelbench.sessions.cell", "accelbench.cell.pipeline")
NOTE = "planted-endpoint-import.json"
"""Written in the working directory of the process that imported this module (the SUT's scratch)."""

Path(NOTE).write_text(
    json.dumps({"pid": os.getpid(), "harness_modules": [m for m in HARNESS_MODULES if m in sys.modules]})
)


class NotingEndpoint(EndpointStack):
    """``llm@url`` under another name; its import left a note where it ran."""

    server: ClassVar[str] = "url"
    precision: ClassVar[str] = "bf16"

    @property
    def name(self) -> str:
        """A plugin's own name."""
        return "llm@planted-noting"


class OwnServerEndpoint(EndpointStack):
    """Names a server accelbench does not start, and says it is available."""

    server: ClassVar[str] = "my-caching-server"

    def unavailable_reason(self, device: str) -> str | None:
        """Always available (the cell must not believe it)."""
        return None
