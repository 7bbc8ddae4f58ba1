"""A user's own model as a workload (``accelbench tune MODEL``): an ONNX file or a torch ``module:function``.

The model becomes a workload like any other: its description (kind, location, import root) is carried
in the workload reference itself, ``accelbench.workloads.user_model:model_<base64 JSON>``; this module's
``__getattr__`` turns such a name back into a workload factory, so the cell imports exactly what was
planned. ONNX files are read with ``onnx.load`` and verified with ``onnx.checker`` (never unpickled);
the quality reference of an ONNX file is ``onnx.reference.ReferenceEvaluator`` (the ONNX
specification's own semantics, in numpy). Samples: sample 0 is the model's example (torch) or a seeded
draw (ONNX); the others are seeded draws of the same shape and dtype (floats from the example's mean and
spread, integers within its range; ONNX integers in ``[0, ONNX_INT_HIGH)``, symbolic dimensions set to 1).
"""

from __future__ import annotations

import base64
import functools
import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from accelbench.errors import UserError, first_line
from accelbench.registry import load
from accelbench.workloads.base import Inputs, Variant, Workload

if TYPE_CHECKING:
    import torch

ONNX_INT_HIGH = 2
"""Integer inputs of an ONNX file are drawn from ``[0, ONNX_INT_HIGH)`` (their valid range is unknown)."""
MAX_INPUT_BYTES = 1 << 30
"""An ONNX graph input larger than this (symbolic dimensions taken as 1) is refused before any cell runs."""
MAX_MODEL_CHARS = 4096
"""The longest MODEL argument accepted (an ONNX path or module:function)."""
_REF_PREFIX = "model_"
"""Attribute names of this module that rebuild a user's model from its reference."""


@dataclass(frozen=True, slots=True)
class ModelSource:
    """A user's model: ``kind`` ``onnx`` (``location``: absolute path) or ``torch`` (``module:function``)."""

    kind: str
    location: str
    name: str
    """The workload name its results are stored under (``tune-<stem>``)."""
    import_root: str = ""
    """Folder put on ``sys.path`` before importing a ``module:function`` (the directory tune ran in)."""


def parse_model(text: str) -> ModelSource:
    """The source named by ``text``: an ONNX file is checked here (a bad file is a UserError); a
    ``module:function`` is user code, checked in a child (``accelbench.workloads.user_check``)."""
    if len(text) > MAX_MODEL_CHARS:
        raise UserError(f"model {text[:40]!r}... is longer than {MAX_MODEL_CHARS} characters")
    path = Path(text)
    try:
        is_file = path.is_file()
    except OSError as exc:  # a name too long for the file system
        raise UserError(f"model {text[:60]!r}: {exc.strerror or exc}") from None
    if path.suffix == ".onnx" or is_file:
        check_onnx(path)
        return ModelSource("onnx", str(path.resolve()), f"tune-{_slug(path.stem)}")
    if ":" not in text:
        raise UserError(f"model {text!r} is neither an ONNX file nor module:function")
    return ModelSource("torch", text, f"tune-{_slug(text.rpartition(':')[2])}", os.getcwd())


def check_onnx(path: Path) -> Any:
    """The ``onnx.ModelProto`` at ``path`` after ``onnx.checker``; unreadable or invalid is a UserError."""
    import onnx

    if not path.is_file():
        problem = "is not a regular file (a directory, device or FIFO)" if path.exists() else "does not exist"
        raise UserError(f"ONNX file {path} {problem}")
    try:
        model = onnx.load(str(path))
        onnx.checker.check_model(model, full_check=True)
    except Exception as err:
        raise UserError(f"{path} is not a valid ONNX model: {first_line(err, 300)}") from None
    if not _graph_inputs(model) or not model.graph.output:
        raise UserError(f"{path}: the ONNX graph needs at least one input and one output")
    _check_opset(path, model)
    for value_info in _graph_inputs(model):
        _check_input_size(path, value_info)
    return model


def _check_opset(path: Path, model: Any) -> None:
    """Refuse a default-domain opset newer than the installed onnx knows (no stack could run it)."""
    import onnx

    known = onnx.defs.onnx_opset_version()
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx") and opset.version > known:
            raise UserError(f"{path}: ONNX opset {opset.version} is newer than this onnx knows ({known})")


def _check_input_size(path: Path, value_info: Any) -> None:
    """Refuse a graph input whose static shape is too large to allocate (``MAX_INPUT_BYTES``)."""
    from onnx import helper

    tensor = value_info.type.tensor_type
    elements = 1
    for dim in tensor.shape.dim:
        elements *= dim.dim_value if dim.HasField("dim_value") and dim.dim_value > 0 else 1
    try:
        itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type)).itemsize
    except (KeyError, TypeError, ValueError):
        raise UserError(f"{path}: input {value_info.name!r} has an element type no stack reads") from None
    if elements * itemsize > MAX_INPUT_BYTES:
        size_gib, limit_gib = elements * itemsize / 2**30, MAX_INPUT_BYTES / 2**30
        raise UserError(
            f"{path}: input {value_info.name!r} needs {size_gib:.3g} GiB (limit {limit_gib:g} GiB)"
        )


def load_torch_model(source: ModelSource, seed: int) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """Call ``module:function`` (torch seeded by ``seed``) and check it returns (module, tensors)."""
    import torch

    function = _import_function(source)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        try:
            returned = function()
        except Exception as err:
            raise UserError(f"{source.location} raised {first_line(err, 300)}") from None
    if not (isinstance(returned, tuple) and len(returned) == 2 and isinstance(returned[0], torch.nn.Module)):
        raise UserError(f"{source.location} must return (torch.nn.Module, tuple of example tensors)")
    module, example = returned
    if not (
        isinstance(example, tuple | list) and example and all(isinstance(t, torch.Tensor) for t in example)
    ):
        raise UserError(f"{source.location}: the example inputs must be a non-empty tuple of tensors")
    return module.eval(), tuple(t.detach().cpu() for t in example)


def _import_function(source: ModelSource) -> Callable[[], Any]:
    if source.import_root and source.import_root not in sys.path:
        sys.path.insert(0, source.import_root)
    try:
        function = load(source.location)
    except Exception as err:
        raise UserError(f"cannot import {source.location}: {first_line(err, 300)}") from None
    if not callable(function):
        raise UserError(f"{source.location} is not a function")
    return function


class _UserWorkload(Workload):
    """A workload made of the user's model ``source``; outputs compared by cosine."""

    task = "user-model"
    quality_metric = "cosine"

    def __init__(self, source: ModelSource) -> None:
        self.source = source


class TorchFunctionModel(_UserWorkload):
    """A user's ``module:function`` as a workload; outputs compared by cosine."""

    name = "tune-torch"

    @functools.cache  # noqa: B019 -- one instance per cell process
    def _loaded(self, seed: int) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
        return load_torch_model(self.source, seed)

    def input_names(self) -> tuple[str, ...]:
        """``input0``, ``input1``, ... one per example tensor."""
        return tuple(f"input{i}" for i in range(len(self._loaded(0)[1])))

    def build_model(self, size: str, seed: int, variant: Variant | None = None) -> torch.nn.Module:
        """The module the function returns (a fresh call per cell process, torch seeded by ``seed``)."""
        return self._loaded(seed)[0]

    def make_sample(self, size: str, seed: int, index: int, variant: Variant | None = None) -> Inputs:
        """Sample 0 is the example; others are seeded draws like it (see the module docstring)."""
        example = tuple(t.numpy() for t in self._loaded(seed)[1])
        if index == 0:
            return example
        rng = np.random.default_rng([0x7E, seed, index])
        return tuple(_like(rng, array) for array in example)


def _like(rng: np.random.Generator, array: np.ndarray) -> np.ndarray:
    """A random array of ``array``'s shape and dtype, in its range (floats: its mean and spread)."""
    if array.dtype == np.bool_:
        return rng.random(array.shape) < max(float(array.mean()), 0.5)
    if np.issubdtype(array.dtype, np.integer):
        return rng.integers(int(array.min()), int(array.max()) + 1, size=array.shape).astype(array.dtype)
    spread = float(array.std()) or 1.0
    return (rng.standard_normal(array.shape) * spread + float(array.mean())).astype(array.dtype)


class OnnxReference:
    """Builds the torch module whose forward evaluates the ONNX file with ``onnx.reference``."""

    @staticmethod
    def module(model_bytes: bytes) -> torch.nn.Module:
        """An ``nn.Module`` computing the first output of the ONNX model (numpy reference evaluator)."""
        import torch

        class _Reference(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model_bytes = model_bytes
                self._evaluator: Any = None

            def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
                from onnx.reference import ReferenceEvaluator

                if self._evaluator is None:
                    self._evaluator = ReferenceEvaluator(self.model_bytes)
                names = self._evaluator.input_names
                feeds = {name: t.numpy() for name, t in zip(names, tensors, strict=True)}
                return torch.from_numpy(np.ascontiguousarray(self._evaluator.run(None, feeds)[0]))

        return _Reference().eval()


class OnnxFileModel(_UserWorkload):
    """A user's ONNX file as a workload; the quality reference is ``onnx.reference.ReferenceEvaluator``."""

    name = "tune-onnx"

    @functools.cached_property
    def _proto(self) -> Any:
        return check_onnx(Path(self.source.location))

    def input_names(self) -> tuple[str, ...]:
        """The graph inputs that are not initializers, in graph order."""
        return tuple(one.name for one in _graph_inputs(self._proto))

    def build_model(self, size: str, seed: int, variant: Variant | None = None) -> torch.nn.Module:
        """The reference module (weights are in the file; ``seed`` only draws the samples)."""
        return OnnxReference.module(self._proto.SerializeToString())

    def make_sample(self, size: str, seed: int, index: int, variant: Variant | None = None) -> Inputs:
        """Seeded inputs of the declared shapes and dtypes (see the module docstring)."""
        rng = np.random.default_rng([0x7F, seed, index])
        return tuple(_onnx_input(rng, one) for one in _graph_inputs(self._proto))


def _graph_inputs(model: Any) -> list[Any]:
    initializers = {one.name for one in model.graph.initializer}
    return [one for one in model.graph.input if one.name not in initializers]


def _onnx_input(rng: np.random.Generator, value_info: Any) -> np.ndarray:
    """A random array for one ONNX graph input (symbolic dimensions are 1)."""
    from onnx import helper

    tensor = value_info.type.tensor_type
    shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in tensor.shape.dim)
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, ONNX_INT_HIGH, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def workload_reference(source: ModelSource) -> str:
    """The ``module:attribute`` reference the cell process imports to build ``source``'s workload."""
    payload = base64.urlsafe_b64encode(json.dumps(asdict(source)).encode()).decode().rstrip("=")
    return f"{__name__}:{_REF_PREFIX}{payload}"


def __getattr__(name: str) -> Any:
    """``model_<payload>``: a factory of the workload ``workload_reference`` described."""
    if not name.startswith(_REF_PREFIX):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    payload = name.removeprefix(_REF_PREFIX)
    source = ModelSource(**json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))
    kind = TorchFunctionModel if source.kind == "torch" else OnnxFileModel
    return functools.partial(kind, source)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text)[:60] or "model"
