"""What the ``tensorflow`` and ``litert`` stacks share: ONNX -> TensorFlow with onnx2tf, once per run.

The shared ONNX file is converted by onnx2tf (PINTO0309/onnx2tf) into a folder of the run's cache,
``<cache_dir>/onnx2tf/<onnx stem>-<digest>/``, holding a SavedModel (``saved_model.pb``, ``variables/``)
and the LiteRT flatbuffers ``model_float32.tflite`` / ``model_float16.tflite``. The digest covers the
converter options and the onnx2tf and TensorFlow versions. Cells run in separate processes, possibly at
the same time, so the conversion holds the ONNX export's ``flock``-style lock, writes a temporary folder
and renames it into place: nobody converts twice and nobody reads half a folder.

Choices, each forced by something measured:
- onnx2tf turns NCHW into NHWC by default; every 3-5-D input is named in
  ``keep_ncw_or_nchw_or_ncdhw_input_names``, so the converted model takes the workload's own layout. An
  output that still comes back channel-last is transposed back (``output_permutation``).
- The graph is handed over as a ``ModelProto``, never as the file path: given a path, onnx2tf rewrites
  the file in place with its shape-inferred graph, and that file is shared with the other ONNX stacks.
  It also skips onnx2tf's "automatic replacement JSON" retries after a failure, which run the model
  through ONNX Runtime three more times.
- ``Expand`` nodes of constants are folded into initializers first (``_onnx_fold``): at a batch above 1
  BERT's default ``token_type_ids`` are one, and onnx2tf cannot convert it.
- onnxsim (a subprocess) is off, and ``copy_onnx_input_output_names_to_tflite`` (which runs ``flatc`` and
  downloads a schema with ``curl``) is not used: nothing is downloaded.
- LiteRT has no Erf builtin; Erf (exact GELU) would become a Flex op that neither ``ai_edge_litert`` nor
  ``tf.lite`` can run. For LiteRT the converter's ``pseudo`` Erf (Abramowitz-Stegun 7.1.26, |error| below
  1.5e-7) is used instead, in a conversion of its own; the SavedModel of the ``tensorflow`` stack keeps
  ``tf.math.erf``. Models without Erf share one conversion.

TensorFlow is never imported by ``OnnxTfStack.unavailable_reason`` (5-10 s and several hundred MB in the
parent process): availability is ``importlib.util.find_spec``; the import happens in the cell's process.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import re
import shutil
from abc import abstractmethod
from collections.abc import Callable, Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from accelbench.errors import Unsupported
from accelbench.stacks._onnx_fold import FOLDED_OPS, fold_constant_expands
from accelbench.stacks._torch_device import device_kind_reason, first_line
from accelbench.stacks.base import CellContext, ModelSpec, Session, Stack
from accelbench.stacks.onnx_export import build_once
from accelbench.versions import installed_versions
from accelbench.workloads.base import Inputs

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

INSTALL = "accelbench[tensorflow]"
FLOAT32_TFLITE = "model_float32.tflite"
"""onnx2tf names its outputs after the ONNX file, or ``model`` when it is given a ``ModelProto``."""
ERF_PSEUDO = ("erf",)
"""onnx2tf's ``replace_to_pseudo_operators`` for LiteRT graphs with Erf."""
CONVERTER_OPTIONS: dict[str, Any] = {"not_use_onnxsim": True, "verbosity": "error"}
LOG_LEVEL_VARIABLE = "TF_CPP_MIN_LOG_LEVEL"
_QUIET_LOG_LEVEL = "2"
"""TensorFlow's C++ log: warnings and info off (three lines printed before absl starts remain)."""
_MISSING_OP = re.compile(r"onnx2tf\.ops\.([A-Za-z][A-Za-z0-9_]*)")
_distributions = {"tensorflow": "tensorflow", "onnx2tf": "onnx2tf"}


class OnnxTfStack(Stack):
    """A stack that runs what onnx2tf makes of the model's ONNX file: available when its ``modules`` are
    installed (found, not imported), versions from the installed metadata, failures named after it."""

    modules: ClassVar[tuple[str, ...]]
    """Modules that must be installed: the stack's, the converter's and the exporter's."""
    distributions: ClassVar[tuple[str, ...]]
    """Distributions whose versions the stack reports, from their metadata."""

    def unavailable_reason(self, device: str) -> str | None:
        """None when the device kind is driven and every module in ``modules`` is installed."""
        return device_kind_reason(device, self.devices) or missing_reason(self.modules)

    def versions(self) -> dict[str, str]:
        """Versions of ``distributions`` (``"?"`` when the metadata is missing)."""
        return distribution_versions(self.distributions)

    def prepare(self, model: torch.nn.Module, spec: ModelSpec, ctx: CellContext) -> Session:
        """``_prepare``, its Unsupported reasons prefixed with the stack's name."""
        with named_failures(self.name):
            return self._prepare(model, spec, ctx)

    @abstractmethod
    def _prepare(self, model: torch.nn.Module, spec: ModelSpec, ctx: CellContext) -> Session:
        """Export, convert (or reuse the conversion) and load: the stack's own steps."""


def missing_reason(modules: tuple[str, ...]) -> str | None:
    """``"<module> not installed (pip install accelbench[tensorflow])"`` for the first module not found."""
    for module in modules:
        if find_spec(module) is None:
            return f"{module} not installed (pip install {INSTALL})"
    return None


def distribution_versions(names: tuple[str, ...]) -> dict[str, str]:
    """Installed versions of the distributions ``names`` (``"?"`` when the metadata is missing)."""
    return installed_versions(names, missing="?")


def import_tensorflow(threads: int) -> Any:
    """TensorFlow, imported quietly, on the CPU only, with ``threads`` intra-op threads and one inter-op.

    Threads can be set only before TensorFlow's runtime starts; a process whose runtime already runs
    another count raises Unsupported rather than measuring something else.
    """
    os.environ.setdefault(LOG_LEVEL_VARIABLE, _QUIET_LOG_LEVEL)
    import tensorflow as tf

    current = tf.config.threading.get_intra_op_parallelism_threads()
    if current == threads and tf.config.threading.get_inter_op_parallelism_threads() == 1:
        return tf
    try:
        tf.config.set_visible_devices([], "GPU")
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError as exc:
        raise Unsupported(
            f"tensorflow already started in this process with {current} threads, not {threads}"
        ) from exc
    return tf


@contextlib.contextmanager
def named_failures(stack: str) -> Iterator[None]:
    """Re-raise an Unsupported from the ``with`` block as ``"<stack>: <reason>"``."""
    try:
        yield
    except Unsupported as exc:
        raise Unsupported(f"{stack}: {exc}") from exc


def has_erf(onnx_file: Path) -> bool:
    """Whether the ONNX graph (top level) contains an Erf node."""
    import onnx

    graph = onnx.load(str(onnx_file), load_external_data=False).graph
    return any(node.op_type == "Erf" for node in graph.node)


def converted_folder(onnx_file: Path, cache_dir: Path, pseudo_ops: tuple[str, ...]) -> Path:
    """Where the onnx2tf output of ``onnx_file`` (with ``pseudo_ops`` replaced) lives in the run cache."""
    key = " ".join(
        (
            repr(sorted(CONVERTER_OPTIONS.items())),
            f"fold {','.join(sorted(FOLDED_OPS))}",
            *pseudo_ops,
            *distribution_versions(tuple(_distributions)).values(),
        )
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return cache_dir / "onnx2tf" / f"{onnx_file.stem}-{digest}"


def convert(
    onnx_file: Path, spec: ModelSpec, cache_dir: Path, pseudo_ops: tuple[str, ...] = ()
) -> tuple[Path, float]:
    """The onnx2tf output folder of ``onnx_file`` and the seconds spent converting (0.0 when cached).

    Raises Unsupported("unsupported op <Op>: ..." or the converter's first error line) when onnx2tf
    cannot convert the graph.
    """
    folder = converted_folder(onnx_file, cache_dir, pseudo_ops)
    convert_s = build_once(
        folder, lambda: _convert_atomically(onnx_file, spec, folder, pseudo_ops), Path.is_dir
    )
    if convert_s:
        logger.info("converted %s with onnx2tf in %.2f s", onnx_file.name, convert_s)
    return folder, convert_s


def _convert_atomically(onnx_file: Path, spec: ModelSpec, folder: Path, pseudo_ops: tuple[str, ...]) -> None:
    """Convert into a temporary folder beside ``folder``, then rename it into place."""
    temp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    try:
        _convert_quietly(onnx_file, spec, temp, pseudo_ops)
        os.replace(temp, folder)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _convert_quietly(onnx_file: Path, spec: ModelSpec, output: Path, pseudo_ops: tuple[str, ...]) -> None:
    """Run ``onnx2tf.convert`` on the loaded graph, its progress prints swallowed."""
    import onnx

    os.environ.setdefault(LOG_LEVEL_VARIABLE, _QUIET_LOG_LEVEL)
    import onnx2tf

    model = onnx.load(str(onnx_file))
    folded = fold_constant_expands(model)
    if folded:
        logger.info("folded %d constant Expand node(s) of %s before onnx2tf", folded, onnx_file.name)
    chatter = io.StringIO()
    with _environment_kept(), contextlib.redirect_stdout(chatter), contextlib.redirect_stderr(chatter):
        try:
            onnx2tf.convert(
                onnx_graph=model,
                output_folder_path=str(output),
                keep_ncw_or_nchw_or_ncdhw_input_names=_channel_first_inputs(model) or None,
                replace_to_pseudo_operators=list(pseudo_ops),
                **CONVERTER_OPTIONS,
            )
        except (Exception, SystemExit) as exc:
            logger.debug("onnx2tf output:\n%s", chatter.getvalue())
            raise Unsupported(f"onnx2tf conversion failed: {failure_reason(exc, model)}") from exc
    if not (output / "saved_model.pb").is_file():
        raise Unsupported(f"onnx2tf wrote no SavedModel for {spec.workload}: {_last_line(chatter)}")


@contextlib.contextmanager
def _environment_kept() -> Iterator[None]:
    """Undo what the converter does to ``os.environ`` (onnx2tf sets ``CUDA_VISIBLE_DEVICES=-1``)."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        for name in set(os.environ) - set(saved):
            del os.environ[name]
        os.environ.update(saved)


def _channel_first_inputs(model: Any) -> list[str]:
    """Graph inputs of rank 3 to 5 (the ones onnx2tf would make channel-last), by name."""
    weights = {one.name for one in model.graph.initializer}
    return [
        one.name
        for one in model.graph.input
        if one.name not in weights and 3 <= len(one.type.tensor_type.shape.dim) <= 5
    ]


def failure_reason(exc: BaseException, model: Any) -> str:
    """A one-line reason naming the ONNX op type where onnx2tf stopped, when it can be found."""
    root = exc
    while root.__cause__ is not None:
        root = root.__cause__
    missing = _MISSING_OP.search(str(root))
    if isinstance(root, ModuleNotFoundError) and missing:
        return f"unsupported op {missing.group(1)}: onnx2tf has no conversion for it"
    node_name = getattr(exc, "onnx_op_name", None) or getattr(root, "onnx_op_name", None)
    op_types = {node.name: node.op_type for node in model.graph.node}
    if node_name in op_types:
        return f"op {op_types[node_name]} ({node_name}): {first_line(root)}"
    return first_line(root)


def _last_line(chatter: io.StringIO) -> str:
    lines = [line.strip() for line in chatter.getvalue().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def output_shape(onnx_file: Path) -> tuple[int, ...]:
    """The static shape of the ONNX graph's first output (the workload's layout)."""
    import onnx

    graph = onnx.load(str(onnx_file), load_external_data=False).graph
    return tuple(dim.dim_value for dim in graph.output[0].type.tensor_type.shape.dim)


def output_permutation(got: tuple[int, ...], want: tuple[int, ...]) -> tuple[int, ...] | None:
    """None when ``got`` is ``want``; the transpose from channel-last back to channel-first when that is
    what the converter did; Unsupported for any other shape."""
    if tuple(got) == tuple(want):
        return None
    rank = len(want)
    channel_first = (0, rank - 1, *range(1, rank - 1))
    if rank >= 3 and tuple(got[axis] for axis in channel_first) == tuple(want):
        return channel_first
    raise Unsupported(f"converted output has shape {tuple(got)}, the model's is {tuple(want)}")


def in_model_layout(
    run: Callable[[Inputs], np.ndarray], permutation: tuple[int, ...] | None
) -> Callable[[Inputs], np.ndarray]:
    """``run`` with its output transposed back to the model's layout when the converter changed it."""
    if permutation is None:
        return run

    def infer(inputs: Inputs) -> np.ndarray:
        return np.ascontiguousarray(run(inputs).transpose(permutation))

    return infer
