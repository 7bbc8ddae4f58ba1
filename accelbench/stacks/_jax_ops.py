"""JAX implementations of the Core ATen ops the workloads use, keyed ``aten.<op>`` (overload-agnostic).

Each entry takes the ATen arguments as they appear in the exported graph (tensors as JAX arrays) and
returns what the ATen op returns. Matrix products and convolutions ask for ``Precision.HIGHEST`` so fp32
means fp32 on accelerators too (no TF32/bf16 passes). An argument combination that is not lowered (a
transposed convolution, ``ceil_mode`` pooling) raises Unsupported naming the op. JAX runs without 64-bit
types by default, so int64 tensors are computed as int32 (token ids and masks fit easily).

Imported only by the jax-xla stack's ``prepare``, after it has set ``XLA_FLAGS``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from accelbench.errors import Unsupported

HIGHEST = lax.Precision.HIGHEST
_CONV_LAYOUTS = {
    1: ("NCH", "OIH", "NCH"),
    2: ("NCHW", "OIHW", "NCHW"),
    3: ("NCDHW", "OIDHW", "NCDHW"),
}


def jnp_dtype(dtype: Any) -> Any:
    """The JAX dtype for a torch dtype (int64 becomes int32 unless x64 is on); None stays None."""
    if dtype is None:
        return None
    name = str(dtype).removeprefix("torch.")
    return jax.dtypes.canonicalize_dtype(np.dtype(bool) if name == "bool" else getattr(jnp, name))


def _refuse(op: str, what: str) -> Unsupported:
    return Unsupported(f"jax-xla: aten.{op} with {what} is not lowered")


def _per_dim(values: Sequence[int] | int, count: int) -> tuple[int, ...]:
    """A per-spatial-dimension tuple from ATen's one-or-many int lists."""
    if isinstance(values, int):
        return (values,) * count
    return tuple(values) * count if len(values) == 1 else tuple(values)


def _axes(dims: Any) -> tuple[int, ...] | None:
    """ATen reduction dims -> numpy axes: None or an empty list means every axis."""
    if dims is None or (isinstance(dims, Sequence) and len(dims) == 0):
        return None
    return (dims,) if isinstance(dims, int) else tuple(dims)


def convolution(
    x: Any,
    weight: Any,
    bias: Any,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
) -> Any:
    """``aten.convolution`` (1-3 spatial dims, NC* layout) via ``lax.conv_general_dilated``."""
    if transposed:
        raise _refuse("convolution", "transposed=True")
    spatial = x.ndim - 2
    out = lax.conv_general_dilated(
        x,
        weight,
        window_strides=_per_dim(stride, spatial),
        padding=[(pad, pad) for pad in _per_dim(padding, spatial)],
        rhs_dilation=_per_dim(dilation, spatial),
        dimension_numbers=_CONV_LAYOUTS[spatial],
        feature_group_count=groups,
        precision=HIGHEST,
    )
    return out if bias is None else out + bias.reshape((1, -1) + (1,) * spatial)


def batch_norm_inference(
    x: Any, weight: Any, bias: Any, mean: Any, var: Any, momentum: float, eps: float
) -> tuple[Any, Any, Any]:
    """``aten._native_batch_norm_legit_no_training``: normalise with the running statistics."""
    shape = (1, -1) + (1,) * (x.ndim - 2)
    scale = lax.rsqrt(var + eps)
    if weight is not None:
        scale = scale * weight
    out = (x - mean.reshape(shape)) * scale.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    empty = jnp.zeros((0,), x.dtype)
    return out, empty, empty


def layer_norm(
    x: Any, normalized_shape: Sequence[int], weight: Any, bias: Any, eps: float
) -> tuple[Any, Any, Any]:
    """``aten.native_layer_norm``: (output, mean, rstd) over the last ``len(normalized_shape)`` axes."""
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    mean = jnp.mean(x, axis=axes, keepdims=True)
    centred = x - mean
    rstd = lax.rsqrt(jnp.mean(centred * centred, axis=axes, keepdims=True) + eps)
    out = centred * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out, mean, rstd


def max_pool(
    x: Any,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: Sequence[int] | int = 0,
    dilation: Sequence[int] | int = 1,
    ceil_mode: bool = False,
) -> tuple[Any, None]:
    """``aten.max_pool2d_with_indices`` without the indices (None: they are never lowered)."""
    if ceil_mode:
        raise _refuse("max_pool2d_with_indices", "ceil_mode=True")
    spatial = len(kernel_size)
    window, strides, pads = _window(kernel_size, stride, padding, x.ndim)
    lowest = jnp.array(-jnp.inf, x.dtype)
    dilated = (1, 1, *_per_dim(dilation, spatial))
    out = lax.reduce_window(x, lowest, lax.max, window, strides, pads, window_dilation=dilated)
    return out, None


def avg_pool(
    x: Any,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: Sequence[int] | int = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Any:
    """``aten.avg_pool2d`` (zero padding counted, no ceil mode, no divisor override)."""
    padded = any(_per_dim(padding, len(kernel_size)))
    if ceil_mode or divisor_override is not None or (padded and not count_include_pad):
        raise _refuse("avg_pool2d", "ceil_mode, divisor_override or count_include_pad=False")
    window, strides, pads = _window(kernel_size, stride, padding, x.ndim)
    total = lax.reduce_window(x, jnp.array(0, x.dtype), lax.add, window, strides, pads)
    return total / math.prod(kernel_size)


def _window(
    kernel_size: Sequence[int], stride: Sequence[int], padding: Sequence[int] | int, ndim: int
) -> tuple[tuple[int, ...], tuple[int, ...], list[tuple[int, int]]]:
    """``reduce_window`` window, strides and padding for an N, C, spatial... tensor."""
    spatial = ndim - 2
    kernel = _per_dim(kernel_size, spatial)
    strides = _per_dim(stride, spatial) if stride else kernel
    pads = [(0, 0), (0, 0)] + [(pad, pad) for pad in _per_dim(padding, spatial)]
    return (1, 1, *kernel), (1, 1, *strides), pads


def adaptive_avg_pool(x: Any, output_size: Sequence[int]) -> Any:
    """``aten._adaptive_avg_pool2d`` when the input size is a multiple of the output size."""
    n, c, height, width = x.shape
    out_h, out_w = output_size
    if height % out_h or width % out_w:
        raise _refuse("_adaptive_avg_pool2d", f"input {height}x{width} not a multiple of {out_h}x{out_w}")
    blocks = x.reshape(n, c, out_h, height // out_h, out_w, width // out_w)
    return blocks.mean(axis=(3, 5))


def addmm(bias: Any, m1: Any, m2: Any, beta: float = 1, alpha: float = 1) -> Any:
    """``aten.addmm``: ``beta * bias + alpha * (m1 @ m2)``."""
    product = jnp.matmul(m1, m2, precision=HIGHEST)
    product = product if alpha == 1 else alpha * product
    return product + (bias if beta == 1 else beta * bias)


def matmul(a: Any, b: Any) -> Any:
    """``aten.mm`` / ``aten.bmm`` at full fp32 precision."""
    return jnp.matmul(a, b, precision=HIGHEST)


def expand(x: Any, size: Sequence[int], implicit: bool = False) -> Any:
    """``aten.expand``: broadcast, ``-1`` keeping the existing size."""
    offset = len(size) - x.ndim
    shape = tuple(x.shape[i - offset] if s == -1 else s for i, s in enumerate(size))
    return jnp.broadcast_to(x, shape)


def slice_tensor(
    x: Any, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1
) -> Any:
    """``aten.slice``: Python slicing semantics along ``dim`` (huge ``end`` values clamp)."""
    index = [slice(None)] * x.ndim
    index[dim] = slice(start, end, step)
    return x[tuple(index)]


def select(x: Any, dim: int, index: int) -> Any:
    """``aten.select``: one index along ``dim`` (negative counts from the end), which is removed."""
    return lax.index_in_dim(x, index % x.shape[dim], axis=dim, keepdims=False)


def squeeze(x: Any, dims: Any = None) -> Any:
    """``aten.squeeze`` (all size-1 axes, or those of ``dims`` that have size 1)."""
    axes = _axes(dims)
    if axes is None:
        return jnp.squeeze(x)
    return jnp.squeeze(x, axis=tuple(axis for axis in axes if x.shape[axis] == 1))


def reduce(function: Callable[..., Any]) -> Callable[..., Any]:
    """``aten.sum``/``mean``/``amax``-style reduction over ``dim`` (all axes when empty)."""

    def reduced(x: Any, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Any:
        result = function(x, axis=_axes(dim), keepdims=keepdim)
        return result if dtype is None else result.astype(jnp_dtype(dtype))

    return reduced


def vector_norm(x: Any, ord: float = 2, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Any:
    """``aten.linalg_vector_norm``: the ``ord``-norm over ``dim`` (all axes when empty)."""
    magnitude = jnp.abs(x if dtype is None else x.astype(jnp_dtype(dtype)))
    axes = _axes(dim)
    if ord == math.inf:
        return jnp.max(magnitude, axis=axes, keepdims=keepdim)
    if ord == -math.inf:
        return jnp.min(magnitude, axis=axes, keepdims=keepdim)
    if ord == 0:
        return jnp.sum(magnitude != 0, axis=axes, keepdims=keepdim).astype(magnitude.dtype)
    if ord == 2:
        return jnp.sqrt(jnp.sum(magnitude * magnitude, axis=axes, keepdims=keepdim))
    return jnp.sum(magnitude**ord, axis=axes, keepdims=keepdim) ** (1.0 / ord)


def full(size: Sequence[int], fill_value: Any, dtype: Any = None, **_: Any) -> Any:
    """``aten.full`` (layout, device and pin_memory ignored)."""
    return jnp.full(tuple(size), fill_value, dtype=jnp_dtype(dtype))


def to_copy(x: Any, dtype: Any = None, **_: Any) -> Any:
    """``aten._to_copy``: a dtype change (device and layout arguments ignored)."""
    return x if dtype is None else x.astype(jnp_dtype(dtype))


def arange(*bounds: Any, dtype: Any = None, **_: Any) -> Any:
    """``aten.arange`` (end / start, end / start, end, step)."""
    start, stop, step = (*bounds, None, None)[:3] if len(bounds) > 1 else (0, bounds[0], None)
    return jnp.arange(start, stop, step, dtype=jnp_dtype(dtype))


def index(x: Any, indices: Sequence[Any]) -> Any:
    """``aten.index.Tensor``: advanced indexing, None meaning the whole axis."""
    return x[tuple(slice(None) if one is None else one for one in indices)]


def div(a: Any, b: Any, rounding_mode: str | None = None) -> Any:
    """``aten.div`` (true division, or ``trunc``/``floor`` rounding)."""
    if rounding_mode == "floor":
        return jnp.floor_divide(a, b)
    quotient = jnp.true_divide(a, b)
    return jnp.trunc(quotient) if rounding_mode == "trunc" else quotient


def identity(x: Any, *_: Any, **__: Any) -> Any:
    """Ops that only copy or alias (values are immutable in JAX)."""
    return x


def split(x: Any, size: int, dim: int = 0) -> list[Any]:
    """``aten.split.Tensor``: chunks of ``size`` along ``dim``."""
    return split_with_sizes(
        x, [min(size, x.shape[dim] - start) for start in range(0, x.shape[dim], size)], dim
    )


def split_with_sizes(x: Any, sizes: Sequence[int], dim: int = 0) -> list[Any]:
    """``aten.split_with_sizes``: consecutive chunks of the given sizes along ``dim``."""
    bounds = np.cumsum(sizes)[:-1].tolist()
    return jnp.split(x, bounds, axis=dim)


def _scaled(alpha: float, b: Any) -> Any:
    return b if alpha == 1 else alpha * b


JAX_OPS: Mapping[str, Callable[..., Any]] = {
    # neural-network ops
    "aten.convolution": convolution,
    "aten._native_batch_norm_legit_no_training": batch_norm_inference,
    "aten.native_layer_norm": layer_norm,
    "aten.max_pool2d_with_indices": max_pool,
    "aten.avg_pool2d": avg_pool,
    "aten._adaptive_avg_pool2d": adaptive_avg_pool,
    "aten.addmm": addmm,
    "aten.mm": matmul,
    "aten.bmm": matmul,
    "aten._softmax": lambda x, dim, half_to_float=False: jax.nn.softmax(x, axis=dim),
    "aten._log_softmax": lambda x, dim, half_to_float=False: jax.nn.log_softmax(x, axis=dim),
    "aten.embedding": lambda weight, indices, *_: jnp.take(weight, indices, axis=0),
    "aten.relu": jax.nn.relu,
    "aten.gelu": lambda x, approximate="none": jax.nn.gelu(x, approximate=approximate == "tanh"),
    "aten.silu": jax.nn.silu,
    "aten.sigmoid": jax.nn.sigmoid,
    "aten.tanh": jnp.tanh,
    "aten.hardtanh": lambda x, low=-1.0, high=1.0: jnp.clip(x, low, high),
    "aten.clamp": lambda x, min=None, max=None: jnp.clip(x, min, max),
    # elementwise arithmetic and comparisons
    "aten.add": lambda a, b, alpha=1: jnp.add(a, _scaled(alpha, b)),
    "aten.sub": lambda a, b, alpha=1: jnp.subtract(a, _scaled(alpha, b)),
    "aten.rsub": lambda a, b, alpha=1: jnp.subtract(b, _scaled(alpha, a)),
    "aten.mul": jnp.multiply,
    "aten.div": div,
    "aten.pow": jnp.power,
    "aten.maximum": jnp.maximum,
    "aten.minimum": jnp.minimum,
    "aten.exp": jnp.exp,
    "aten.log": jnp.log,
    "aten.sqrt": jnp.sqrt,
    "aten.rsqrt": lax.rsqrt,
    "aten.neg": jnp.negative,
    "aten.abs": jnp.abs,
    "aten.erf": lax.erf,
    "aten.reciprocal": jnp.reciprocal,
    "aten.eq": jnp.equal,
    "aten.ne": jnp.not_equal,
    "aten.lt": jnp.less,
    "aten.le": jnp.less_equal,
    "aten.gt": jnp.greater,
    "aten.ge": jnp.greater_equal,
    "aten.logical_not": jnp.logical_not,
    "aten.logical_and": jnp.logical_and,
    "aten.logical_or": jnp.logical_or,
    "aten.bitwise_not": jnp.invert,
    "aten.bitwise_and": jnp.bitwise_and,
    "aten.bitwise_or": jnp.bitwise_or,
    "aten.where": jnp.where,
    "aten.masked_fill": lambda x, mask, value: jnp.where(mask, jnp.asarray(value, x.dtype), x),
    # reductions
    "aten.mean": reduce(jnp.mean),
    "aten.sum": reduce(jnp.sum),
    "aten.amax": reduce(jnp.max),
    "aten.amin": reduce(jnp.min),
    "aten.linalg_vector_norm": vector_norm,
    # shapes, copies, dtypes and creation
    "aten.view": lambda x, shape: jnp.reshape(x, shape),
    "aten._unsafe_view": lambda x, shape: jnp.reshape(x, shape),
    "aten.reshape": lambda x, shape: jnp.reshape(x, shape),
    "aten.permute": lambda x, dims: jnp.transpose(x, dims),
    "aten.expand": expand,
    "aten.unsqueeze": jnp.expand_dims,
    "aten.squeeze": squeeze,
    "aten.slice": slice_tensor,
    "aten.select": select,
    "aten.cat": lambda tensors, dim=0: jnp.concatenate(tensors, axis=dim),
    "aten.split": split,
    "aten.split_with_sizes": split_with_sizes,
    "aten.index": index,
    "aten.index_select": lambda x, dim, indices: jnp.take(x, indices, axis=dim),
    "aten.gather": lambda x, dim, indices, sparse_grad=False: jnp.take_along_axis(x, indices, axis=dim),
    "aten.clone": identity,
    "aten.alias": identity,
    "aten.lift_fresh_copy": identity,
    "aten.detach": identity,
    "aten._to_copy": to_copy,
    "aten.full": full,
    "aten.full_like": lambda x, fill_value, dtype=None, **_: jnp.full_like(x, fill_value, jnp_dtype(dtype)),
    "aten.scalar_tensor": lambda value, dtype=None, **_: jnp.asarray(value, dtype=jnp_dtype(dtype)),
    "aten.arange": arange,
}
"""Lowering table: ``aten.<op>`` -> JAX implementation."""
