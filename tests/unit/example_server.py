"""A new served inference server, written as ``docs/serving.md`` and the architecture's count say: the
worked example the count is checked on (``test_adding_a_served_server``).

``onnxruntime@stdlib-http``: the ``onnxruntime`` stack's ONNX file behind a v2 server of the standard
library (``tests.unit.example_server_app``). What a developer writes: this module (a ``ServedStack`` with
``start_server``), the app the server runs, and one row in ``accelbench.registry.STACKS`` (the test adds
it). Export, the client, LoadGen's queries over HTTP, the quality gate and the audits on the replies, and
the stop are the harness's.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from accelbench.serving import metrics, process, stack
from accelbench.stacks.base import CellContext, ModelSpec

STATS = {"server_stats": "none: the example server keeps no timings of its own"}


class StdlibHttp(stack.ServedStack):
    """ONNX Runtime behind the standard library's HTTP server, one request at a time per thread."""

    name: ClassVar[str] = "onnxruntime@stdlib-http"
    server: ClassVar[str] = "stdlib-http"
    batching: ClassVar[bool] = False
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "ONNX (from PyTorch), served by http.server (v2 binary messages)",
        "compiler": "ONNX Runtime graph optimizer",
        "platform": "CPU EP (MLAS)",
    }

    def start_server(self, files: Mapping[int, Path], spec: ModelSpec, ctx: CellContext) -> stack.Served:
        """Write the app's config and start it; ready when the model's ``/ready`` route answers."""
        port = process.free_port()
        config_path = stack.write_config(ctx, self.server, stack.server_config(files, ctx, http_port=port))
        url = f"http://{process.HOST}:{port}"
        server = process.start(
            self.server,
            [sys.executable, "-m", "tests.unit.example_server_app", str(config_path)],
            [port],
            config_path.with_suffix(".log"),
            lambda: metrics.http_ok(f"{url}/v2/models/{stack.MODEL_NAME}/ready"),
            stack.START_TIMEOUT_S,
            env={**os.environ},
        )
        return stack.Served(url, server, lambda: STATS)
