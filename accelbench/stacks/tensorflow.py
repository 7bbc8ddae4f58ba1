"""The ``tensorflow`` stack: the shared ONNX file converted by onnx2tf, run as a TF2 function compiled by XLA.

Steps: ``export_onnx`` (once per run) -> onnx2tf -> SavedModel in the run's cache (once per run, see
``_onnx_tf``) -> ``tf.saved_model.load`` -> its ``serving_default`` signature wrapped in
``tf.function(jit_compile=True)``: the whole graph is compiled by XLA:CPU on the first call, which is
timed as part of the compile time. Inputs keep the workload's layout (NCHW images, int64 token ids).

TensorFlow runs on the CPU only (GPUs are hidden: the stack drives ``cpu``), with ``ctx.threads``
intra-op threads and one inter-op thread, set before TensorFlow's runtime starts. oneDNN custom ops are
left at TensorFlow's default (on for x86), which is what users get; the setting is recorded.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from accelbench.errors import Unsupported
from accelbench.stacks import _onnx_tf
from accelbench.stacks._onnx_inputs import input_positions
from accelbench.stacks._torch_device import first_line, precision_of
from accelbench.stacks.base import CellContext, ModelSpec, Session
from accelbench.stacks.onnx_export import export_onnx
from accelbench.workloads.base import Inputs

if TYPE_CHECKING:
    import torch

_MODULES = ("tensorflow", "onnx2tf", "onnx_graphsurgeon", "tf_keras", "onnx", "onnxscript", "torch")
_DISTRIBUTIONS = ("tensorflow", "onnx2tf", "onnx", "onnxscript", "torch")
SIGNATURE = "serving_default"


class TensorFlow(_onnx_tf.OnnxTfStack):
    """TF2 + XLA: onnx2tf SavedModel (cached per run) -> ``tf.function(jit_compile=True)`` on the CPU."""

    name: ClassVar[str] = "tensorflow"
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "TensorFlow 2 (ONNX from PyTorch, converted by onnx2tf)",
        "compiler": "XLA (tf.function jit_compile=True)",
        "platform": "CPU (XLA:CPU, LLVM codegen)",
    }
    modules: ClassVar[tuple[str, ...]] = _MODULES
    distributions: ClassVar[tuple[str, ...]] = _DISTRIBUTIONS

    def _prepare(self, model: torch.nn.Module, spec: ModelSpec, ctx: CellContext) -> Session:
        """Export, convert (or reuse the SavedModel), load, and compile with XLA on the first call."""
        tf = _onnx_tf.import_tensorflow(ctx.threads)
        path, export_s = export_onnx(model, spec, ctx.cache_dir)
        folder, convert_s = _onnx_tf.convert(path, spec, ctx.cache_dir)
        start_s = time.perf_counter()
        loaded = tf.saved_model.load(str(folder))
        load_s = time.perf_counter() - start_s
        run = _compile(tf, loaded, input_positions(path, spec))
        start_s = time.perf_counter()
        try:
            first = run(spec.example)
        except Exception as exc:
            raise Unsupported(f"XLA compilation failed: {first_line(exc)}") from exc
        first_call_s = time.perf_counter() - start_s
        permutation = _onnx_tf.output_permutation(first.shape, _onnx_tf.output_shape(path))
        details = {
            "threads": str(tf.config.threading.get_intra_op_parallelism_threads()),
            "inter_op_threads": str(tf.config.threading.get_inter_op_parallelism_threads()),
            "jit_compile": "True",
            "devices": ",".join(one.name for one in tf.config.get_visible_devices()),
            "onednn_opts": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "default (on)"),
            "onnx_file": path.name,
            "saved_model": folder.name,
            "export_s": f"{export_s:.6f}",
            "convert_s": f"{convert_s:.6f}",
            "load_s": f"{load_s:.6f}",
            "first_call_s": f"{first_call_s:.6f}",
        }
        compile_s = export_s + convert_s + load_s + first_call_s
        return Session(_onnx_tf.in_model_layout(run, permutation), precision_of(model), compile_s, details)


def _compile(tf: Any, loaded: Any, positions: list[tuple[int, str]]) -> Callable[[Inputs], np.ndarray]:
    """The serving signature in ``tf.function(jit_compile=True)``: inputs by name, one output as numpy.

    The closure keeps ``loaded`` alive: the signature only references the SavedModel's variables.
    """
    signature = loaded.signatures[SIGNATURE]
    output_name = sorted(signature.structured_outputs)[0]

    @tf.function(jit_compile=True)
    def compiled(**feed: Any) -> Any:
        with tf.device("/CPU:0"):
            return loaded.signatures[SIGNATURE](**feed)[output_name]

    def run(inputs: Inputs) -> np.ndarray:
        return compiled(**{name: tf.constant(inputs[position]) for position, name in positions}).numpy()

    return run
