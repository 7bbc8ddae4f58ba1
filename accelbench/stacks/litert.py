"""The ``litert`` stack: the shared ONNX file converted by onnx2tf to an fp32 ``.tflite``, run by LiteRT.

Steps: ``export_onnx`` (once per run) -> onnx2tf -> ``model_float32.tflite`` in the run's cache (once
per run, see ``_onnx_tf``; graphs with Erf get their own conversion with the converter's polynomial
Erf, as LiteRT has no Erf builtin) -> ``ai_edge_litert.interpreter.Interpreter`` with
``num_threads=ctx.threads`` and its default CPU delegate (XNNPACK). The float16 file onnx2tf also
writes is never used; the precision reported is read from the interpreter's tensors (``fp32`` when no
float tensor is anything else). TensorFlow is needed for the conversion only: a cell that finds the
``.tflite`` in the cache never imports it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from accelbench.errors import Unsupported
from accelbench.stacks import _onnx_tf
from accelbench.stacks._onnx_inputs import input_positions
from accelbench.stacks._torch_device import first_line
from accelbench.stacks.base import CellContext, ModelSpec, Session
from accelbench.stacks.onnx_export import export_onnx
from accelbench.workloads.base import Inputs

if TYPE_CHECKING:
    import torch

_MODULES = ("ai_edge_litert", "tensorflow", "onnx2tf", "onnx_graphsurgeon", "tf_keras", "onnx", "torch")
_DISTRIBUTIONS = ("ai-edge-litert", "tensorflow", "onnx2tf", "onnx", "onnxscript", "torch")
_FLEX_OP = re.compile(r"\((Flex[A-Za-z0-9_]+)\)")
_PRECISION_NAMES = {"float32": "fp32", "float16": "fp16", "float64": "fp64", "bfloat16": "bf16"}
_TENSOR_NAME = re.compile(r"^(serving_default_)?(?P<name>.+?)(:\d+)?$")
"""LiteRT input names look like ``serving_default_<onnx name>:0`` or just ``<onnx name>``."""


class LiteRt(_onnx_tf.OnnxTfStack):
    """LiteRT (TF Lite) interpreter on the onnx2tf fp32 flatbuffer, XNNPACK delegate, ``ctx.threads``."""

    name: ClassVar[str] = "litert"
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "LiteRT / TF Lite (ONNX from PyTorch, converted by onnx2tf)",
        "compiler": "TFLite converter (MLIR), XNNPACK delegate",
        "platform": "CPU (XNNPACK kernels)",
    }
    modules: ClassVar[tuple[str, ...]] = _MODULES
    distributions: ClassVar[tuple[str, ...]] = _DISTRIBUTIONS

    def _prepare(self, model: torch.nn.Module, spec: ModelSpec, ctx: CellContext) -> Session:
        """Export, convert (or reuse the .tflite), and open an interpreter with its tensors allocated."""
        path, export_s = export_onnx(model, spec, ctx.cache_dir)
        pseudo_ops = _onnx_tf.ERF_PSEUDO if _onnx_tf.has_erf(path) else ()
        if not _onnx_tf.converted_folder(path, ctx.cache_dir, pseudo_ops).is_dir():
            _onnx_tf.import_tensorflow(ctx.threads)  # the converter runs TensorFlow: threads first
        folder, convert_s = _onnx_tf.convert(path, spec, ctx.cache_dir, pseudo_ops)
        start_s = time.perf_counter()
        interpreter = _interpreter(folder / _onnx_tf.FLOAT32_TFLITE, ctx.threads)
        load_s = time.perf_counter() - start_s
        run = _make_run(interpreter, input_positions(path, spec), spec)
        start_s = time.perf_counter()
        first = run(spec.example)
        first_call_s = time.perf_counter() - start_s
        permutation = _onnx_tf.output_permutation(first.shape, _onnx_tf.output_shape(path))
        details = {
            "threads": str(ctx.threads),
            "delegate": "XNNPACK (LiteRT default CPU delegate)",
            "tflite_file": f"{folder.name}/{_onnx_tf.FLOAT32_TFLITE}",
            "erf": "onnx2tf polynomial (|error| < 1.5e-7)" if pseudo_ops else "none in graph",
            "onnx_file": path.name,
            "export_s": f"{export_s:.6f}",
            "convert_s": f"{convert_s:.6f}",
            "load_s": f"{load_s:.6f}",
            "first_call_s": f"{first_call_s:.6f}",
        }
        compile_s = export_s + convert_s + load_s + first_call_s
        infer = _onnx_tf.in_model_layout(run, permutation)
        return Session(infer, _precision(interpreter), compile_s, details)


def _interpreter(tflite: Path, threads: int) -> Any:
    """A LiteRT interpreter on ``tflite`` with tensors allocated; a Flex (TF) op is Unsupported, named."""
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(tflite), num_threads=threads)
    try:
        interpreter.allocate_tensors()
    except RuntimeError as exc:
        flex = _FLEX_OP.search(str(exc))
        reason = f"unsupported op {flex.group(1)}: needs the Flex delegate" if flex else first_line(exc)
        raise Unsupported(reason) from exc
    return interpreter


def _precision(interpreter: Any) -> str:
    """``fp32`` unless a floating tensor of the model has another precision (then that one's name)."""
    floating = {
        np.dtype(detail["dtype"]).name
        for detail in interpreter.get_tensor_details()
        if np.issubdtype(np.dtype(detail["dtype"]), np.floating)
    }
    others = sorted(floating - {"float32"})
    return _PRECISION_NAMES.get(others[0], others[0]) if others else "fp32"


def _make_run(
    interpreter: Any, positions: list[tuple[int, str]], spec: ModelSpec
) -> Callable[[Inputs], np.ndarray]:
    """``run``: each kept input set by name (shape and dtype checked once), invoke, the output copied."""
    details = {_short_name(one["name"]): one for one in interpreter.get_input_details()}
    missing = [name for _, name in positions if name not in details]
    if missing:
        raise Unsupported(f"the .tflite has no input {', '.join(missing)} (has {', '.join(details)})")
    feeds = [(position, details[name]["index"]) for position, name in positions]
    for position, name in positions:
        want, got = tuple(spec.example[position].shape), tuple(details[name]["shape"])
        if want != got:
            raise Unsupported(f"input {name} has shape {got} in the .tflite, {want} in the workload")
    output_index = interpreter.get_output_details()[0]["index"]

    def run(inputs: Inputs) -> np.ndarray:
        for position, index in feeds:
            interpreter.set_tensor(index, inputs[position])
        interpreter.invoke()
        return interpreter.get_tensor(output_index)

    return run


def _short_name(tensor_name: str) -> str:
    match = _TENSOR_NAME.match(tensor_name)
    return match.group("name") if match else tensor_name
