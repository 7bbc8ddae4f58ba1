"""``onnxruntime@triton`` (Triton's dynamic batcher) and ``onnxruntime@triton-nobatch``, through PyTriton.

The ``nvidia-pytriton`` wheel ships Triton Inference Server itself (``tritonserver`` 2.51, Python
backend only: the model is a Python function running ONNX Runtime). It needs numpy<2 and protobuf<7, so
the server runs from a venv of its own, pinned by ``pytriton_constraints.txt``: its Python is
``$ACCELBENCH_PYTRITON_PYTHON`` or ``~/.cache/accelbench/pytriton-venv/bin/python``, made once by
``python -m accelbench.serving.triton [FOLDER]`` (about 300 MB, under a minute with cached wheels),
never at import; without it the stacks are unavailable with that hint. Triton's Python-backend stub
loads ``libpython`` through the dynamic linker, so ``LD_LIBRARY_PATH`` points at this interpreter's
``LIBDIR`` (the venv shares it); otherwise the system's libpython of another patch release is found and
the model fails to load. The server's own timings come from Triton's statistics endpoint (queue,
compute input / infer / output, per request) behind an access token made per server.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from accelbench.serving import metrics, process
from accelbench.serving.stack import (
    MODEL_NAME,
    START_TIMEOUT_S,
    Served,
    ServedStack,
    server_config,
    write_config,
)
from accelbench.stacks.base import CellContext, ModelSpec

ENV_VAR = "ACCELBENCH_PYTRITON_PYTHON"
CONSTRAINTS = Path(__file__).with_name("pytriton_constraints.txt")
SCRIPT = Path(__file__).with_name("triton_app.py")
READY_MARK = "accelbench-pytriton-ready"
"""Written into the venv by ``create_venv`` once its imports work; holds nvidia-pytriton's version."""
TIMINGS = ("queue", "compute_input", "compute_infer", "compute_output", "success")


def default_venv() -> Path:
    """``~/.cache/accelbench/pytriton-venv`` of the user (a cell's HOME points into its run folder)."""
    return Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache" / "accelbench" / "pytriton-venv"


def server_python() -> Path:
    """The Python of the PyTriton venv (it may not exist)."""
    configured = os.environ.get(ENV_VAR)
    return Path(configured) if configured else default_venv() / "bin" / "python"


def missing_reason() -> str | None:
    """None when the PyTriton venv is ready, else why not and how to make it."""
    python = server_python()
    if not (python.parent.parent / READY_MARK).exists():
        return f"no PyTriton venv at {python.parent.parent} (python -m {__name__} creates it)"
    return None


class Triton(ServedStack):
    """ONNX Runtime as a Python-backend model of Triton Inference Server (PyTriton), dynamic batching."""

    name: ClassVar[str] = "onnxruntime@triton"
    server: ClassVar[str] = "triton"
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "ONNX (from PyTorch), served by Triton via PyTriton (HTTP, v2 protocol)",
        "compiler": "ONNX Runtime graph optimizer",
        "platform": "CPU EP (MLAS)",
    }

    def unavailable_reason(self, device: str) -> str | None:
        """The ONNX stack's reasons, then the PyTriton venv's."""
        return super().unavailable_reason(device) or missing_reason()

    def own_versions(self) -> dict[str, str]:
        """The client side's distributions and the server venv's nvidia-pytriton."""
        marked = (server_python().parent.parent / READY_MARK).read_text().strip()
        return {**super().own_versions(), "nvidia-pytriton": marked}

    def start_server(self, files: Mapping[int, Path], spec: ModelSpec, ctx: CellContext) -> Served:
        """Write the script's config and start it; ready when Triton says the model is ready."""
        ports = [process.free_port() for _ in range(3)]
        temp_dir = tempfile.mkdtemp(prefix="abtri-", dir="/tmp")  # PyTriton makes the workspace itself
        token = secrets.token_hex(16)
        config = server_config(
            files,
            ctx,
            inputs=_input_table(spec),
            max_batch=max(files),
            token=token,
            http_port=ports[0],
            grpc_port=ports[1],
            metrics_port=ports[2],
            workspace=str(Path(temp_dir) / "workspace"),
        )
        config_path = write_config(ctx, "triton", config)
        url = f"http://{process.HOST}:{ports[0]}"
        server = process.start(
            self.server,
            [str(server_python()), str(SCRIPT), str(config_path)],
            ports,
            config_path.with_suffix(".log"),
            lambda: metrics.http_ok(f"{url}/v2/models/{MODEL_NAME}/ready"),
            START_TIMEOUT_S,
            env=_server_environment(),
            after_stop=lambda: shutil.rmtree(temp_dir, ignore_errors=True),
        )
        stats_url = f"{url}/v2/models/{MODEL_NAME}/stats"
        headers = {"triton-access-token": token}
        return Served(url, server, lambda: triton_stats(json.loads(metrics.http_text(stats_url, headers))))


class TritonNoBatch(Triton):
    """The same model with batching off: each request runs alone."""

    name: ClassVar[str] = "onnxruntime@triton-nobatch"
    server: ClassVar[str] = "triton-nobatch"
    batching: ClassVar[bool] = False


def _input_table(spec: ModelSpec) -> list[list[Any]]:
    """[name, dtype, shape of one row] of every model input, as Triton declares them."""
    pairs = zip(spec.input_names, spec.example, strict=True)
    return [[name, array.dtype.name, list(array.shape[1:])] for name, array in pairs]


def _server_environment() -> dict[str, str]:
    libdir = str(sysconfig.get_config_var("LIBDIR"))
    previous = os.environ.get("LD_LIBRARY_PATH")
    return {**os.environ, "LD_LIBRARY_PATH": f"{libdir}:{previous}" if previous else libdir}


def triton_stats(document: dict[str, Any]) -> dict[str, str]:
    """Detail entries from Triton's model statistics: mean ms per request of each timing (``queue``,
    ``compute_infer``, ... ``success`` = the whole request), requests and executions (their ratio is
    the mean batch size in requests)."""
    model = document["model_stats"][0]
    found: dict[str, str] = {}
    for name in TIMINGS:
        timing = model["inference_stats"][name]
        if int(timing["count"]):
            found[f"server_{name}_ms_mean"] = f"{int(timing['ns']) / int(timing['count']) / 1e6:.6g}"
    found["server_requests"] = str(model["inference_count"])
    found["server_executions"] = str(model["execution_count"])
    if int(model["execution_count"]):
        found["server_batch_size_mean"] = (
            f"{int(model['inference_count']) / int(model['execution_count']):.4g}"
        )
    return found


def create_venv(folder: Path) -> Path:
    """Create the PyTriton venv in ``folder`` with the pinned wheels, check its imports, mark it ready."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    python = folder / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--quiet", "-c", str(CONSTRAINTS)]
    subprocess.run([*pip, "nvidia-pytriton", "onnxruntime", "numpy"], check=True)
    check = "import pytriton.triton, onnxruntime; from importlib.metadata import version as v; "
    done = subprocess.run(
        [str(python), "-c", check + "print(v('nvidia-pytriton'))"], check=True, capture_output=True, text=True
    )
    (folder / READY_MARK).write_text(done.stdout.strip() + "\n")
    return python


if __name__ == "__main__":
    print(create_venv(Path(sys.argv[1]) if len(sys.argv) > 1 else default_venv()))
