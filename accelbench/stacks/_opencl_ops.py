"""The opencl stack's executor: an exported graph scheduled as OpenCL kernel launches, replayed per sample.

``OpenClRuntime`` holds a context, an in-order queue and the kernel program (``_opencl_kernels``) built
for one device. ``schedule_plan`` walks a ``GraphPlan`` once with ``OPENCL_OPS``: weights are uploaded,
every intermediate tensor gets its own buffer and every kernel its arguments, so ``Schedule.run`` only
enqueues the recorded launches. Views (view, reshape, unsqueeze, ...) share their input's buffer; permute,
expand, slice and select are one strided ``gather``. Only fp32 tensors are computed (int64 only as
embedding indices); anything else raises Unsupported naming the op.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from accelbench.errors import Unsupported
from accelbench.stacks._export_graph import GraphPlan, Step, TensorMeta, evaluate
from accelbench.stacks._opencl_kernels import BINARY_CODES, GEMM_TILE, SOURCE, UNARY_CODES


@dataclass(frozen=True, slots=True)
class ClTensor:
    """A contiguous row-major tensor in an OpenCL buffer."""

    buffer: Any
    shape: tuple[int, ...]
    dtype: str

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)


class OpenClRuntime:
    """Context, in-order queue and the built kernel program on one OpenCL device."""

    def __init__(self, device: Any, cache_dir: Path | None = None) -> None:
        import pyopencl as cl

        self.device = device
        self.context = cl.Context([device])
        self.queue = cl.CommandQueue(self.context)
        start_s = time.perf_counter()
        cache = None if cache_dir is None else str(cache_dir)
        with warnings.catch_warnings():  # some drivers report "compilation done" as compiler output
            warnings.simplefilter("ignore", cl.CompilerWarning)
            self.program = cl.Program(self.context, SOURCE).build(cache_dir=cache)
        self.build_s = time.perf_counter() - start_s


class Schedule:
    """Buffers and kernel launches (arguments already set) recorded once and replayed by ``run``."""

    def __init__(self, runtime: OpenClRuntime) -> None:
        self.runtime = runtime
        self.launches: list[tuple[Any, tuple[int, ...], tuple[int, ...] | None]] = []
        self.kept: list[tuple[Any, ...]] = []
        """The launches' arguments: OpenCL does not retain buffers set as kernel arguments."""

    def upload(self, array: np.ndarray) -> ClTensor:
        """A read-only device copy of ``array``."""
        import pyopencl as cl

        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
        host = np.ascontiguousarray(array) if array.size else np.zeros(1, array.dtype)
        buffer = cl.Buffer(self.runtime.context, flags, hostbuf=host)
        return ClTensor(buffer, tuple(array.shape), str(array.dtype))

    def empty(self, shape: Sequence[int], dtype: str = "float32") -> ClTensor:
        """An uninitialised device tensor."""
        import pyopencl as cl

        nbytes = max(math.prod(shape) * np.dtype(dtype).itemsize, 4)
        buffer = cl.Buffer(self.runtime.context, cl.mem_flags.READ_WRITE, size=nbytes)
        return ClTensor(buffer, tuple(shape), dtype)

    def launch(
        self, name: str, global_size: tuple[int, ...], *args: Any, local_size: tuple[int, ...] | None = None
    ) -> None:
        """Record kernel ``name`` over ``global_size`` (ints -> int32, floats -> float32)."""
        import pyopencl as cl

        if math.prod(global_size) == 0:
            return
        kernel = cl.Kernel(self.runtime.program, name)
        values = tuple(_kernel_arg(one) for one in args)
        kernel.set_args(*values)
        self.kept.append(values)
        self.launches.append((kernel, global_size, local_size))

    def run(self) -> None:
        """Enqueue every recorded launch (in order, on the in-order queue)."""
        import pyopencl as cl

        for kernel, global_size, local_size in self.launches:
            cl.enqueue_nd_range_kernel(self.runtime.queue, kernel, global_size, local_size)


def _kernel_arg(value: Any) -> Any:
    if isinstance(value, ClTensor):
        return value.buffer
    if isinstance(value, bool | int):
        return np.int32(value)
    if isinstance(value, float):
        return np.float32(value)
    return value


def schedule_plan(
    runtime: OpenClRuntime, plan: GraphPlan, example: Sequence[np.ndarray]
) -> tuple[Schedule, list[ClTensor], ClTensor]:
    """The schedule of ``plan``, its input tensors (to fill per sample) and its output tensor."""
    schedule = Schedule(runtime)
    weights = [schedule.upload(array) for array in plan.weights]
    inputs = [schedule.empty(array.shape, str(array.dtype)) for array in example]

    def call(step: Step, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return OPENCL_OPS[step.key](schedule, step, *args, **kwargs)

    output = evaluate(plan, plan.bind(weights, inputs), call)
    if not isinstance(output, ClTensor) or output.dtype != "float32":
        raise Unsupported("opencl: the model output is not an fp32 tensor")
    return schedule, inputs, output


def _refuse(step: Step, what: str) -> Unsupported:
    return Unsupported(f"opencl: {step.key} with {what} is not supported")


def _floats(step: Step, *tensors: Any) -> None:
    """Raise Unsupported unless every argument is an fp32 ``ClTensor``."""
    for tensor in tensors:
        if not isinstance(tensor, ClTensor) or tensor.dtype != "float32":
            kind = tensor.dtype if isinstance(tensor, ClTensor) else type(tensor).__name__
            raise _refuse(step, f"{kind} operands")


def _shape(step: Step) -> tuple[int, ...]:
    if not isinstance(step.meta, TensorMeta):
        raise _refuse(step, "a non-tensor output")
    return step.meta.shape


def contiguous_strides(shape: Sequence[int]) -> list[int]:
    """Row-major element strides of ``shape``."""
    strides = [1] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * shape[axis + 1]
    return strides


def _meta_buffer(s: Schedule, shape: Sequence[int], *strides: Sequence[int]) -> ClTensor:
    flat = [len(shape), *shape, *(one for group in strides for one in group)]
    return s.upload(np.array(flat, dtype=np.int32))


def _gather(s: Schedule, step: Step, x: Any, strides: Sequence[int], base: int = 0) -> ClTensor:
    """A new tensor of the step's shape read from ``x`` at ``base + sum(index * stride)``."""
    _floats(step, x)
    shape = _shape(step)
    out = s.empty(shape)
    s.launch("gather", (out.size,), x, out, _meta_buffer(s, shape, strides), base)
    return out


def view(s: Schedule, step: Step, x: Any, *_: Any, **__: Any) -> ClTensor:
    """view, reshape, unsqueeze, squeeze, clone, alias: the same buffer under the step's shape."""
    if not isinstance(x, ClTensor):
        raise _refuse(step, f"a {type(x).__name__} input")
    return ClTensor(x.buffer, _shape(step), x.dtype)


def permute(s: Schedule, step: Step, x: Any, dims: Sequence[int]) -> ClTensor:
    """``aten.permute`` as a strided gather."""
    strides = contiguous_strides(x.shape)
    return _gather(s, step, x, [strides[dim] for dim in dims])


def expand(s: Schedule, step: Step, x: Any, size: Sequence[int], implicit: bool = False) -> ClTensor:
    """``aten.expand``: stride 0 along broadcast axes."""
    return _gather(s, step, x, _broadcast_strides(x.shape, _shape(step)))


def slice_tensor(
    s: Schedule,
    step: Step,
    x: Any,
    dim: int = 0,
    start: int | None = None,
    end: int | None = None,
    step_: int = 1,
) -> ClTensor:
    """``aten.slice`` with Python slicing semantics along ``dim``."""
    dim %= len(x.shape)
    picked = range(x.shape[dim])[slice(start, end, step_)]
    strides = contiguous_strides(x.shape)
    base = picked.start * strides[dim] if len(picked) else 0
    strides[dim] *= picked.step
    return _gather(s, step, x, strides, base)


def select(s: Schedule, step: Step, x: Any, dim: int, index: int) -> ClTensor:
    """``aten.select``: one index along ``dim``, which is dropped."""
    dim %= len(x.shape)
    strides = contiguous_strides(x.shape)
    base = (index % x.shape[dim]) * strides[dim]
    return _gather(s, step, x, strides[:dim] + strides[dim + 1 :], base)


def _broadcast_strides(shape: Sequence[int], out_shape: Sequence[int]) -> list[int]:
    """Strides that read a ``shape`` tensor broadcast to ``out_shape`` (0 along broadcast axes)."""
    offset = len(out_shape) - len(shape)
    strides = contiguous_strides(shape)
    own = [0 if size == 1 and out_shape[i + offset] != 1 else strides[i] for i, size in enumerate(shape)]
    return [0] * offset + own


def binary(name: str) -> Callable[..., ClTensor]:
    """add / sub / mul / div with broadcasting; a Python number operand becomes a one-element tensor."""

    def run(
        s: Schedule, step: Step, a: Any, b: Any, alpha: float = 1, rounding_mode: str | None = None
    ) -> ClTensor:
        if alpha != 1 or rounding_mode is not None:
            raise _refuse(step, "alpha or rounding_mode")
        a, b = (
            s.upload(np.array(one, dtype=np.float32)) if isinstance(one, float | int) else one
            for one in (a, b)
        )
        _floats(step, a, b)
        shape = _shape(step)
        out = s.empty(shape)
        strides = (_broadcast_strides(a.shape, shape), _broadcast_strides(b.shape, shape))
        s.launch("binary", (out.size,), a, b, out, _meta_buffer(s, shape, *strides), BINARY_CODES[name])
        return out

    return run


def unary(name: str) -> Callable[..., ClTensor]:
    """relu / gelu (erf or tanh form) / tanh, element by element."""

    def run(s: Schedule, step: Step, x: Any, approximate: str = "none") -> ClTensor:
        _floats(step, x)
        code = UNARY_CODES["gelu_tanh" if name == "gelu" and approximate == "tanh" else name]
        out = s.empty(x.shape)
        s.launch("unary", (out.size,), x, out, code)
        return out

    return run


def _gemm(
    s: Schedule, step: Step, a: Any, b: Any, bias: Any, batch: int, strides: tuple[int, int]
) -> ClTensor:
    """C[batch] = A[batch] @ B[batch] (+ bias row), tiled ``GEMM_TILE`` x ``GEMM_TILE``."""
    _floats(step, a, b, *([] if bias is None else [bias]))
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    out = s.empty(_shape(step))
    tiles = (-(-n // GEMM_TILE) * GEMM_TILE, -(-m // GEMM_TILE) * GEMM_TILE, batch)
    has_bias = bias is not None
    bias_arg = bias if has_bias else out
    args = (a, b, bias_arg, out, m, n, k, strides[0], strides[1], int(has_bias))
    s.launch("gemm", tiles, *args, local_size=(GEMM_TILE, GEMM_TILE, 1))
    return out


def mm(s: Schedule, step: Step, a: Any, b: Any) -> ClTensor:
    """``aten.mm``."""
    return _gemm(s, step, a, b, None, 1, (0, 0))


def bmm(s: Schedule, step: Step, a: Any, b: Any) -> ClTensor:
    """``aten.bmm``: batched, one product per leading index."""
    return _gemm(s, step, a, b, None, a.shape[0], (a.shape[1] * a.shape[2], b.shape[1] * b.shape[2]))


def addmm(s: Schedule, step: Step, bias: Any, a: Any, b: Any, beta: float = 1, alpha: float = 1) -> ClTensor:
    """``aten.addmm`` with a bias row broadcast over the rows (beta = alpha = 1)."""
    if beta != 1 or alpha != 1 or not isinstance(bias, ClTensor) or bias.size != b.shape[-1]:
        raise _refuse(step, "beta/alpha != 1 or a bias that is not one row")
    return _gemm(s, step, a, b, bias, 1, (0, 0))


def layer_norm(
    s: Schedule, step: Step, x: Any, normalized_shape: Sequence[int], weight: Any, bias: Any, eps: float
) -> tuple[ClTensor, ClTensor, ClTensor]:
    """``aten.native_layer_norm``: (output, mean, rstd), one work-item per row."""
    affine = weight is not None and bias is not None
    if (weight is None) != (bias is None):
        raise _refuse(step, "only one of weight and bias")
    _floats(step, x, *([weight, bias] if affine else []))
    cols = math.prod(normalized_shape)
    out, mean, rstd = (s.empty(meta.shape) for meta in step.meta)
    extra = (weight, bias) if affine else (out, out)
    s.launch("layer_norm", (x.size // cols,), x, *extra, out, mean, rstd, cols, float(eps), int(affine))
    return out, mean, rstd


def softmax(s: Schedule, step: Step, x: Any, dim: int, half_to_float: bool = False) -> ClTensor:
    """``aten._softmax`` along the last axis."""
    _floats(step, x)
    if dim % len(x.shape) != len(x.shape) - 1:
        raise _refuse(step, f"dim={dim} (only the last axis)")
    out = s.empty(x.shape)
    s.launch("softmax", (x.size // x.shape[-1],), x, out, x.shape[-1])
    return out


def embedding(s: Schedule, step: Step, weight: Any, indices: Any, *_: Any) -> ClTensor:
    """``aten.embedding``: rows of ``weight`` picked by int64 ``indices``."""
    _floats(step, weight)
    if not isinstance(indices, ClTensor) or indices.dtype != "int64":
        raise _refuse(step, "indices that are not an int64 tensor")
    out = s.empty(_shape(step))
    s.launch("embedding", (out.size,), weight, indices, out, weight.shape[1])
    return out


def mean(
    s: Schedule, step: Step, x: Any, dims: Any = None, keepdim: bool = False, dtype: Any = None
) -> ClTensor:
    """``aten.mean``: reduced axes moved last by a gather when needed, then one mean per row."""
    _floats(step, x)
    if dtype is not None:
        raise _refuse(step, "a dtype argument")
    rank = len(x.shape)
    dims = (dims,) if isinstance(dims, int) else dims
    axes = sorted({axis % rank for axis in dims}) if dims else list(range(rank))
    kept = [axis for axis in range(rank) if axis not in axes]
    order = kept + axes
    if order != list(range(rank)):
        strides = contiguous_strides(x.shape)
        moved = Step(
            name=step.name,
            key=step.key,
            target=step.target,
            args=(),
            kwargs={},
            meta=TensorMeta(tuple(x.shape[a] for a in order), x.dtype),
        )
        x = _gather(s, moved, x, [strides[axis] for axis in order])
    cols = math.prod(x.shape[len(kept) :])
    out = s.empty(_shape(step))
    s.launch("row_mean", (out.size,), x, out, cols)
    return out


OPENCL_OPS: Mapping[str, Callable[..., Any]] = {
    "aten.mm": mm,
    "aten.bmm": bmm,
    "aten.addmm": addmm,
    "aten.add": binary("add"),
    "aten.sub": binary("sub"),
    "aten.mul": binary("mul"),
    "aten.div": binary("div"),
    "aten.relu": unary("relu"),
    "aten.gelu": unary("gelu"),
    "aten.tanh": unary("tanh"),
    "aten.native_layer_norm": layer_norm,
    "aten._softmax": softmax,
    "aten.embedding": embedding,
    "aten.mean": mean,
    "aten.permute": permute,
    "aten.expand": expand,
    "aten.slice": slice_tensor,
    "aten.select": select,
    "aten.view": view,
    "aten._unsafe_view": view,
    "aten.reshape": view,
    "aten.unsqueeze": view,
    "aten.squeeze": view,
    "aten.clone": view,
    "aten.alias": view,
    "aten.detach": view,
}
"""The kernel set: ``aten.<op>`` -> function scheduling its kernels (``(schedule, step, *args)``)."""
