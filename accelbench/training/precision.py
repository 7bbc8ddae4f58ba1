"""The precision a training stack declares, set in torch before training and read back for the result.

A stack with a training path declares its precision in ``DECLARED`` (one row per stack; a stack without a
row has no training path). ``fp32`` means IEEE fp32 in every matmul and convolution: TF32 is turned off
(``torch.backends.cuda.matmul.allow_tf32``, ``torch.backends.cudnn.allow_tf32``) and
``torch.set_float32_matmul_precision("highest")``, whatever torch's defaults or an earlier cell left
(torch's default lets cuDNN convolutions use TF32). ``tf32`` is its own precision class: both flags on and
``"high"``. The flags are set in every process of a cell, including data-parallel workers, and read back
after setting, so the stored record says what torch really had.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from accelbench.errors import Unsupported

FP32, TF32 = "fp32", "tf32"
DECLARED: dict[str, str] = {"torch-eager": FP32, "torch-inductor": FP32}
"""Training stacks and the precision each declares (a TF32 training stack is one row saying ``tf32``)."""
MATMUL_PRECISION = {FP32: "highest", TF32: "high"}
"""``torch.set_float32_matmul_precision`` for each precision class."""


@dataclass(frozen=True, slots=True)
class TrainingPrecision:
    """The precision a stack declared and the torch settings read back after setting them."""

    name: str
    """``fp32`` or ``tf32``: the result's ``effective_precision``."""
    declared_by: str
    matmul_allow_tf32: bool
    cudnn_allow_tf32: bool
    float32_matmul_precision: str


def declared(stack: str) -> str:
    """The precision ``stack`` declares; Unsupported for a stack without a training path."""
    if stack not in DECLARED:
        raise Unsupported(f"{stack} has no training path")
    return DECLARED[stack]


def apply(stack: str) -> TrainingPrecision:
    """Set torch's TF32 switches to what ``stack`` declares; the settings as torch reports them after."""
    name = declared(stack)
    tf32 = name == TF32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.set_float32_matmul_precision(MATMUL_PRECISION[name])
    record = TrainingPrecision(
        name=name,
        declared_by=stack,
        matmul_allow_tf32=bool(torch.backends.cuda.matmul.allow_tf32),
        cudnn_allow_tf32=bool(torch.backends.cudnn.allow_tf32),
        float32_matmul_precision=torch.get_float32_matmul_precision(),
    )
    _check(record)
    return record


def _check(record: TrainingPrecision) -> None:
    """Unsupported when torch did not take the settings the declared precision needs."""
    tf32 = record.name == TF32
    wanted = (tf32, tf32, MATMUL_PRECISION[record.name])
    got = (record.matmul_allow_tf32, record.cudnn_allow_tf32, record.float32_matmul_precision)
    if got != wanted:
        raise Unsupported(f"{record.declared_by}: torch kept {got} for {record.name}, wanted {wanted}")
