"""A served deployment as a stack: ``<stack>@<server>``, e.g. ``onnxruntime@ray-serve``.

``prepare`` prepares the model as the in-process stack does (the ONNX file of
``accelbench.stacks.onnx_export``; with dynamic batching also the file for ``MAX_BATCH`` rows, since
the exported graphs have static shapes), starts the server with it (``start_server``, one subclass per
server) and returns a session whose ``infer`` is a ``ServedInfer`` client: LoadGen sends its queries
over HTTP (``ServedInfer.submit``), the quality gate and the audits check the server's replies. The
server is stopped when the cell's process ends (``accelbench.serving.process``) or when the client is
closed. A request carries one ``infer`` batch (``ModelSpec.batch`` rows); with ``batching`` the server
joins waiting requests (up to ``MAX_BATCH`` rows, waiting ``BATCH_WAIT_S``) and pads them to the
exported size.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import time
from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from accelbench.errors import Unsupported
from accelbench.serving import process
from accelbench.serving.client import ServedInfer
from accelbench.serving.metrics import LiveDetails
from accelbench.serving.process import ServerProcess
from accelbench.stacks._torch_device import precision_of
from accelbench.stacks.base import CellContext, ModelSpec, Session
from accelbench.stacks.onnx_export import OnnxFileStack, export_onnx

if TYPE_CHECKING:
    import torch

MAX_BATCH = 8
BATCH_WAIT_S = 0.002
MODEL_NAME = "model"
START_TIMEOUT_S = 180.0
"""Ray starts in 10-18 s on this 2-core VM under load; a server not ready after this is unavailable."""


@dataclass(frozen=True, slots=True)
class Served:
    """A started server: where its v2 endpoint is, how to read its own timings, its process."""

    url: str
    process: ServerProcess | None
    stats: Callable[[], Mapping[str, str]]
    endpoint: str | None = None
    """Where requests are posted, when not the v2 route ``<url>/v2/models/<model>/infer``."""


class ServedStack(OnnxFileStack):
    """The ONNX model of the ``onnxruntime`` stack, run by ONNX Runtime inside a server."""

    server: ClassVar[str]
    """The server's name, the part after ``@`` (``ray-serve``, ``ray-serve-nobatch``)."""
    batching: ClassVar[bool] = True
    install: ClassVar[str] = "accelbench[onnxruntime,serve]"
    modules: ClassVar[tuple[str, ...]] = ("onnxruntime", "aiohttp")
    """ONNX Runtime in the server and the HTTP client here; a server that needs more adds its own."""
    distributions: ClassVar[tuple[str, ...]] = ("onnxruntime", "aiohttp")

    def prepare(self, model: torch.nn.Module, spec: ModelSpec, ctx: CellContext) -> Session:
        """Export the ONNX file(s), start the server on them and connect the client."""
        files, export_s, note = export_files(model, spec, ctx.cache_dir, self.batching)
        start_s = time.perf_counter()
        served = process.on_free_ports(lambda: self.start_server(files, spec, ctx))
        stop = functools.partial(process.stop, served.process) if served.process is not None else None
        client = ServedInfer(
            served.url, MODEL_NAME, spec.input_names, on_close=stop, endpoint=served.endpoint
        )
        startup_s = time.perf_counter() - start_s
        fixed = {
            "server": self.server,
            "url": served.url,
            "batching": note,
            "onnx_files": ",".join(path.name for path in files.values()),
            "export_s": f"{export_s:.6f}",
            "server_start_s": f"{startup_s:.6f}",
            "threads": str(ctx.threads),
        }
        return Session(client, precision_of(model), export_s + startup_s, LiveDetails(fixed, served.stats))

    @abstractmethod
    def start_server(self, files: Mapping[int, Path], spec: ModelSpec, ctx: CellContext) -> Served:
        """Start the server on the ONNX ``files`` (batch -> path) and return once it is ready."""


def server_config(files: Mapping[int, Path], ctx: CellContext, **more: object) -> dict[str, object]:
    """What every server script's config holds (the ONNX files by rows, the model's name, threads, the
    batching wait, the pid whose end stops the server), plus ``more``."""
    return {
        "models": {str(rows): str(path) for rows, path in files.items()},
        "model": MODEL_NAME,
        "threads": ctx.threads,
        "batch_wait_s": BATCH_WAIT_S,
        "owner_pid": os.getpid(),
        **more,
    }


def write_config(ctx: CellContext, server: str, config: Mapping[str, object]) -> Path:
    """``<cell>/serving/<server>-<pid>.json`` holding ``config`` (the server's log goes beside it); one
    per process, as each attempt and trial of a cell starts its own server."""
    folder = ctx.work_dir / "serving"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{server}-{os.getpid()}.json"
    path.write_text(json.dumps(config, indent=1))
    return path


def export_files(
    model: torch.nn.Module, spec: ModelSpec, cache_dir: Path, batching: bool
) -> tuple[dict[int, Path], float, str]:
    """The ONNX files by rows: ``spec.batch`` (one request), and with batching the file for as many
    whole requests as fit in ``MAX_BATCH`` rows (when that is more than one request and the model
    exports at that size); the export seconds; a note on batching (``on (...)``, ``off``, why off)."""
    path, export_s = export_onnx(model, spec, cache_dir)
    files = {spec.batch: path}
    requests = MAX_BATCH // spec.batch
    if not batching or requests < 2:
        return files, export_s, "off" if not batching else f"off: batch {spec.batch} fills a server batch"
    rows = tuple(np.concatenate([array] * requests, axis=0) for array in spec.example)
    wide = dataclasses.replace(spec, batch=requests * spec.batch, example=rows)
    try:
        files[wide.batch], wide_s = export_onnx(model, wide, cache_dir)
    except Unsupported as err:
        return files, export_s, f"off: batch {wide.batch} export failed ({err})"[:200]
    note = f"on (up to {requests} requests, {wide.batch} rows, wait {BATCH_WAIT_S * 1e3:g} ms)"
    return files, export_s + wide_s, note
