"""The app of the worked example server ``onnxruntime@stdlib-http`` (``tests.unit.example_server``).

A v2 (Open Inference Protocol, binary tensors) server on the standard library's ``ThreadingHTTPServer``,
ONNX Runtime inside, loopback only. Run as ``python -m tests.unit.example_server_app CONFIG.json``
(``accelbench.serving.stack.server_config`` plus ``http_port``). It stops by itself when its owner, the
cell process, is gone (``accelbench.serving.sessions.watch_owner``).
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from accelbench.serving import protocol
from accelbench.serving.process import HOST
from accelbench.serving.sessions import watch_owner


def serve(config: dict[str, Any]) -> None:
    """Load the one ONNX file of ``config`` and answer v2 requests until the owner is gone."""
    import onnxruntime as ort

    (path,) = config["models"].values()  # no batching: the file of one request's rows
    options = ort.SessionOptions()
    options.intra_op_num_threads = int(config["threads"])
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    output = session.get_outputs()[0].name
    route = f"/v2/models/{config['model']}"

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == f"{route}/ready" else 404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            length = self.headers.get(protocol.HEADER_LENGTH)
            inputs = protocol.decode(body, int(length) if length else None, "inputs")
            (result,) = session.run([output], inputs)
            reply, header = protocol.encode({"output": result}, "outputs")
            self.send_response(200)
            self.send_header("Content-Type", protocol.CONTENT_TYPE)
            self.send_header(protocol.HEADER_LENGTH, str(header))
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: one line a request would be the log's whole size."""

    server = ThreadingHTTPServer((HOST, int(config["http_port"])), Handler)
    watch_owner(int(config["owner_pid"]), server.shutdown)
    print("accelbench: stdlib-http ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    serve(json.loads(Path(sys.argv[1]).read_text()))
