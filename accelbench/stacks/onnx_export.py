"""Export a workload's PyTorch module to ONNX once per run, shared by the ONNX-consuming stacks.

The file is ``<cache_dir>/onnx/<workload>-<size>-<variant>-<seed>.onnx``, written with the dynamo
exporter (opset 18, weights inside the file). Cells of one run run in separate processes, possibly at
the same time, so the export holds an exclusive ``flock`` on a ``.lock`` file beside the model, writes a
temporary file and renames it into place: a reader never sees half a file and nobody exports twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import logging
import os
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from accelbench.errors import Unsupported
from accelbench.stacks._torch_device import first_line
from accelbench.stacks.base import ModelSpec

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

OPSET_VERSION = 18
_CHATTY_LOGGERS = ("torch.onnx", "torch.export", "torch._dynamo", "onnxscript")
"""Loggers that warn about harmless things during export (e.g. "torchvision is not installed")."""


def onnx_path(spec: ModelSpec, cache_dir: Path) -> Path:
    """Where the ONNX file of ``spec`` lives in the run's cache folder."""
    return cache_dir / "onnx" / f"{spec.workload}-{spec.size}-{spec.variant}-{spec.seed}.onnx"


def export_onnx(model: torch.nn.Module, spec: ModelSpec, cache_dir: Path) -> tuple[Path, float]:
    """The ONNX file of ``model`` and the seconds spent exporting it (0.0 when it was already there).

    Raises Unsupported("onnx export failed: ...") when the exporter cannot convert the model.
    """
    path = onnx_path(spec, cache_dir)
    if path.exists():
        return path, 0.0
    path.parent.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(path.with_name(path.name + ".lock")):
        if path.exists():
            return path, 0.0
        start_s = time.perf_counter()
        _export_atomically(model, spec, path)
        export_s = time.perf_counter() - start_s
    logger.info("exported %s in %.2f s", path.name, export_s)
    return path, export_s


@contextlib.contextmanager
def exclusive_lock(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock_path`` (created if needed) for the ``with`` block."""
    with open(lock_path, "a") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)


def _export_atomically(model: torch.nn.Module, spec: ModelSpec, path: Path) -> None:
    """Export to a temporary name beside ``path``, then rename it into place."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        _export_quietly(model, spec, temp)
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


@contextlib.contextmanager
def _quiet_loggers() -> Iterator[None]:
    """Silence Python warnings and the exporter's chatty loggers (below ERROR) for the ``with`` block."""
    loggers = [logging.getLogger(name) for name in _CHATTY_LOGGERS]
    levels = [one.level for one in loggers]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for one in loggers:
            one.setLevel(logging.ERROR)
        try:
            yield
        finally:
            for one, level in zip(loggers, levels, strict=True):
                one.setLevel(level)


def _export_quietly(model: torch.nn.Module, spec: ModelSpec, path: Path) -> None:
    """Run the dynamo exporter with its progress prints and warnings swallowed."""
    import torch

    tensors = tuple(torch.from_numpy(array) for array in spec.example)
    chatter = io.StringIO()
    with _quiet_loggers(), contextlib.redirect_stdout(chatter), contextlib.redirect_stderr(chatter):
        try:
            torch.onnx.export(
                model,
                tensors,
                path,
                dynamo=True,
                external_data=False,
                opset_version=OPSET_VERSION,
                input_names=list(spec.input_names),
                output_names=["output"],
                verbose=False,
            )
        except Exception as exc:
            logger.debug("onnx exporter output:\n%s", chatter.getvalue())
            raise Unsupported(f"onnx export failed: {first_line(exc)}") from exc
