"""Export a workload's PyTorch module to ONNX once per run, shared by the ONNX-consuming stacks.

The file is ``<cache_dir>/onnx/<workload>-<size>-<variant>-<seed>.onnx`` (``...-<seed>-b<batch>.onnx``
for a batch above 1: the graph has static shapes, so each batch size is its own file, and so are the
compiled artefacts named after it), written with the dynamo exporter (opset 18, weights inside the
file). Cells of one run run in separate processes, possibly at the same time, so the export holds an
exclusive ``flock`` on a ``.lock`` file beside the model, writes a temporary file and renames it into
place: a reader never sees half a file and nobody exports twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import logging
import os
import time
import warnings
from collections.abc import Callable, Iterator
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from accelbench.errors import Unsupported
from accelbench.stacks._torch_device import device_kind_reason, first_line, import_reason
from accelbench.stacks.base import ModelSpec, Stack

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

OPSET_VERSION = 18
_CHATTY_LOGGERS = ("torch.onnx", "torch.export", "torch._dynamo", "onnxscript")
"""Loggers that warn about harmless things during export (e.g. "torchvision is not installed")."""


EXPORTER_MODULES = ("onnx", "onnxscript", "torch")
"""What ``export_onnx`` imports: every stack that reads the ONNX file needs them."""


class OnnxFileStack(Stack):
    """A stack that runs the model's ONNX file (``export_onnx``): available when its own modules and the
    exporter's import; its versions are its distributions' and the exporter's."""

    reads_onnx: ClassVar[bool] = True
    install: ClassVar[str]
    """The pip extra that installs the stack, e.g. ``accelbench[tvm]``."""
    modules: ClassVar[tuple[str, ...]]
    """The stack's own modules that must import (the exporter's are added)."""
    distributions: ClassVar[tuple[str, ...]]
    """The distributions whose versions the stack reports (the exporter's are added)."""

    def unavailable_reason(self, device: str) -> str | None:
        """None when the device kind is driven and every module imports, else the first reason."""
        reasons = (import_reason(module, self.install) for module in (*self.modules, *EXPORTER_MODULES))
        return device_kind_reason(device, self.devices) or next(filter(None, reasons), None)

    def versions(self) -> dict[str, str]:
        """The stack's distributions' versions, then onnx, onnxscript and torch (the exporter)."""
        import onnx
        import onnxscript
        import torch

        exporter = {
            "onnx": onnx.__version__,
            "onnxscript": onnxscript.__version__,
            "torch": torch.__version__,
        }
        return {**self.own_versions(), **exporter}

    def own_versions(self) -> dict[str, str]:
        """Versions of ``distributions`` from the installed metadata."""
        return {name: version(name) for name in self.distributions}


def onnx_path(spec: ModelSpec, cache_dir: Path) -> Path:
    """Where the ONNX file of ``spec`` lives in the run's cache folder (one file per batch size)."""
    batch = f"-b{spec.batch}" if spec.batch > 1 else ""
    return cache_dir / "onnx" / f"{spec.workload}-{spec.size}-{spec.variant}-{spec.seed}{batch}.onnx"


def export_onnx(model: torch.nn.Module, spec: ModelSpec, cache_dir: Path) -> tuple[Path, float]:
    """The ONNX file of ``model`` and the seconds spent exporting it (0.0 when it was already there).

    Raises Unsupported("onnx export failed: ...") when the exporter cannot convert the model.
    """
    path = onnx_path(spec, cache_dir)
    export_s = build_once(path, lambda: _export_atomically(model, spec, path))
    if export_s:
        logger.info("exported %s in %.2f s", path.name, export_s)
    return path, export_s


def build_once(target: Path, build: Callable[[], None], built: Callable[[Path], bool] = Path.exists) -> float:
    """Run ``build`` (which makes ``target``) unless ``target`` is ``built`` already, holding a lock beside it
    so that concurrent cells build it once: the seconds ``build`` took, 0.0 when it did not run."""
    if built(target):
        return 0.0
    target.parent.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(target.with_name(target.name + ".lock")):
        if built(target):
            return 0.0
        start_s = time.perf_counter()
        build()
        return time.perf_counter() - start_s


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
