"""``onnxruntime@url``: the requests go to a v2 server someone else runs (``--serve-url http://host:port``).

accelbench neither starts nor stops that server: it may be a Triton or a Ray Serve on another machine,
or on this one. The cell still exports the workload's ONNX file (its name is in the result's
``onnx_files`` detail, the file in the run's ``cache/onnx`` folder): that is the model the server must
serve, under the name ``model`` with the input names of the file. Nothing here vouches that it does:
the quality gate compares every checked reply with the fp32 reference of its input, so a server that
serves another model fails it, and the audits judge its replies like any stack's (a server that answers
repeats from a cache is disqualified). Ready = ``GET <url>/v2/models/model/ready`` answers 200 when the
cell starts; otherwise the cell is unavailable with that reason. The server's own timings are not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from accelbench.errors import Unavailable
from accelbench.serving import metrics
from accelbench.serving.stack import MODEL_NAME, Served, ServedStack
from accelbench.stacks.base import CellContext, ModelSpec


class RemoteServed(ServedStack):
    """ONNX Runtime (or whatever the server runs) behind the v2 server at ``--serve-url``."""

    name: ClassVar[str] = "onnxruntime@url"
    server: ClassVar[str] = "url"
    batching: ClassVar[bool] = False
    """The remote server batches as it is configured; accelbench exports one request's file only."""
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "ONNX (from PyTorch), served by a remote v2 server (--serve-url)",
        "compiler": "whatever the remote server runs",
        "platform": "the remote server's",
    }

    def start_server(self, files: Mapping[int, Path], spec: ModelSpec, ctx: CellContext) -> Served:
        """Check that the server at ``ctx.serve_url`` has the model ready; start nothing."""
        if not ctx.serve_url:
            raise Unavailable(f"{self.name} sends its requests to --serve-url, and the run has none")
        url = ctx.serve_url.rstrip("/")
        ready = f"{url}/v2/models/{MODEL_NAME}/ready"
        try:
            answered = metrics.http_ok(ready)
        except Exception as err:  # refused, timed out, HTTP error: the reason is the message
            raise Unavailable(
                f"no v2 model {MODEL_NAME!r} ready at {url}: {type(err).__name__}: {err}"
            ) from err
        if not answered:
            raise Unavailable(f"no v2 model {MODEL_NAME!r} ready at {url}")
        return Served(url, None, lambda: {"server_stats": "not read: a remote server"})
