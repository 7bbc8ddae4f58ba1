"""OpenCL C source of the opencl stack's kernel set: fp32 GEMM, elementwise, row-wise and gather kernels.

All tensors are contiguous row-major ``float`` buffers (token ids are ``long``). Index arithmetic uses
``int``: a tensor must have fewer than 2**31 elements. ``meta`` buffers carry ``[rank, shape..., strides...]``
so one gather kernel serves permute, expand, slice and select, and one binary kernel serves broadcasting.
No fast-math options: the kernels use the built-in ``erf``, ``exp`` and ``sqrt`` at OpenCL's fp32 accuracy.
"""

from __future__ import annotations

GEMM_TILE = 16
"""Side of the square work-group (and local-memory tile) of the ``gemm`` kernel."""

UNARY_CODES = {"relu": 0, "gelu": 1, "gelu_tanh": 2, "tanh": 3}
BINARY_CODES = {"add": 0, "sub": 1, "mul": 2, "div": 3}

SOURCE = f"""
#define TILE {GEMM_TILE}

__kernel void gather(__global const float* src, __global float* dst, __global const int* meta,
                     const int base) {{
    int i = get_global_id(0), rank = meta[0], rem = i, offset = base;
    for (int d = rank - 1; d >= 0; --d) {{
        int size = meta[1 + d];
        offset += (rem % size) * meta[1 + rank + d];
        rem /= size;
    }}
    dst[i] = src[offset];
}}

__kernel void binary(__global const float* a, __global const float* b, __global float* out,
                     __global const int* meta, const int op) {{
    int i = get_global_id(0), rank = meta[0], rem = i, offset_a = 0, offset_b = 0;
    for (int d = rank - 1; d >= 0; --d) {{
        int size = meta[1 + d], index = rem % size;
        offset_a += index * meta[1 + rank + d];
        offset_b += index * meta[1 + 2 * rank + d];
        rem /= size;
    }}
    float x = a[offset_a], y = b[offset_b];
    out[i] = op == 0 ? x + y : op == 1 ? x - y : op == 2 ? x * y : x / y;
}}

__kernel void unary(__global const float* x, __global float* out, const int op) {{
    int i = get_global_id(0);
    float v = x[i];
    if (op == 0) out[i] = fmax(v, 0.0f);
    else if (op == 1) out[i] = 0.5f * v * (1.0f + erf(v * 0.70710678118654752f));
    else if (op == 2) out[i] = 0.5f * v * (1.0f + tanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));
    else out[i] = tanh(v);
}}

__kernel void gemm(__global const float* a, __global const float* b, __global const float* bias,
                   __global float* c, const int m, const int n, const int k,
                   const int batch_stride_a, const int batch_stride_b, const int has_bias) {{
    __local float tile_a[TILE][TILE];
    __local float tile_b[TILE][TILE];
    int col = get_global_id(0), row = get_global_id(1), batch = get_global_id(2);
    int local_col = get_local_id(0), local_row = get_local_id(1);
    a += batch * batch_stride_a;
    b += batch * batch_stride_b;
    c += batch * m * n;
    float acc = 0.0f;
    for (int t = 0; t < k; t += TILE) {{
        tile_a[local_row][local_col] = (row < m && t + local_col < k) ? a[row * k + t + local_col] : 0.0f;
        tile_b[local_row][local_col] = (t + local_row < k && col < n) ? b[(t + local_row) * n + col] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int j = 0; j < TILE; ++j) acc += tile_a[local_row][j] * tile_b[j][local_col];
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    if (row < m && col < n) c[row * n + col] = has_bias ? acc + bias[col] : acc;
}}

__kernel void layer_norm(__global const float* x, __global const float* weight,
                         __global const float* bias, __global float* out, __global float* mean_out,
                         __global float* rstd_out, const int cols, const float eps, const int affine) {{
    int row = get_global_id(0);
    x += row * cols;
    out += row * cols;
    float mean = 0.0f, var = 0.0f;
    for (int j = 0; j < cols; ++j) mean += x[j];
    mean /= cols;
    for (int j = 0; j < cols; ++j) var += (x[j] - mean) * (x[j] - mean);
    float rstd = 1.0f / sqrt(var / cols + eps);
    for (int j = 0; j < cols; ++j)
        out[j] = affine ? (x[j] - mean) * rstd * weight[j] + bias[j] : (x[j] - mean) * rstd;
    mean_out[row] = mean;
    rstd_out[row] = rstd;
}}

__kernel void softmax(__global const float* x, __global float* out, const int cols) {{
    int row = get_global_id(0);
    x += row * cols;
    out += row * cols;
    float top = x[0], total = 0.0f;
    for (int j = 1; j < cols; ++j) top = fmax(top, x[j]);
    for (int j = 0; j < cols; ++j) total += (out[j] = exp(x[j] - top));
    for (int j = 0; j < cols; ++j) out[j] /= total;
}}

__kernel void row_mean(__global const float* x, __global float* out, const int cols) {{
    int row = get_global_id(0);
    float total = 0.0f;
    for (int j = 0; j < cols; ++j) total += x[row * cols + j];
    out[row] = total / cols;
}}

__kernel void embedding(__global const float* weight, __global const long* indices,
                        __global float* out, const int dim) {{
    int i = get_global_id(0);
    out[i] = weight[indices[i / dim] * dim + i % dim];
}}

__kernel void copy(__global const float4* src, __global float4* dst) {{
    int i = get_global_id(0);
    dst[i] = src[i];
}}
"""
