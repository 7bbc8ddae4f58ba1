"""Roofline arithmetic: achieved FLOP/s, share of measured peak, the roofline bound (pure functions).

With a workload's cost (FLOPs ``F``, bytes ``B``, arithmetic intensity ``AI = F / B``) and the
machine's measured peaks (``P`` FLOP/s, ``W`` byte/s), the attainable rate is ``min(P, AI x W)`` and
the fastest possible pass takes ``max(F / P, B / W)`` seconds. The ridge point ``P / W`` (FLOP per
byte) separates memory-bound workloads (AI below it) from compute-bound ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.workloads.flops import WorkloadCost


@dataclass(frozen=True, slots=True)
class RooflineFigures:
    """Where one measured pass sits under the machine's roofline."""

    achieved_flops_per_s: float
    peak_flops_per_s: float
    peak_bytes_per_s: float
    share_of_peak: float
    """Achieved / peak FLOP/s."""
    attainable_flops_per_s: float
    """``min(peak FLOP/s, AI x peak byte/s)``."""
    share_of_roofline: float
    """Achieved / attainable FLOP/s: 1.0 means the pass runs at its roofline bound."""
    roofline_bound_s: float
    """The shortest time the roofline allows for one pass."""
    bound_kind: str
    """``compute`` or ``memory``."""


def achieved_flops_per_s(cost: WorkloadCost, latency_s: float) -> float:
    """FLOP/s of one pass of ``cost`` that took ``latency_s`` seconds."""
    _positive(latency_s=latency_s)
    return cost.flops / latency_s


def share_of_peak(achieved: float, peak: float) -> float:
    """``achieved / peak`` (any unit, the same for both)."""
    _positive(peak=peak)
    return achieved / peak


def ridge_point(peak_flops_per_s: float, peak_bytes_per_s: float) -> float:
    """Arithmetic intensity (FLOP per byte) where the memory roof meets the compute roof."""
    _positive(peak_flops_per_s=peak_flops_per_s, peak_bytes_per_s=peak_bytes_per_s)
    return peak_flops_per_s / peak_bytes_per_s


def attainable_flops_per_s(
    arithmetic_intensity: float, peak_flops_per_s: float, peak_bytes_per_s: float
) -> float:
    """The roofline: ``min(peak FLOP/s, AI x peak byte/s)``."""
    _positive(peak_flops_per_s=peak_flops_per_s, peak_bytes_per_s=peak_bytes_per_s)
    return min(peak_flops_per_s, arithmetic_intensity * peak_bytes_per_s)


def roofline_bound_s(cost: WorkloadCost, peak_flops_per_s: float, peak_bytes_per_s: float) -> float:
    """The shortest time one pass can take: ``max(FLOPs / peak FLOP/s, bytes / peak byte/s)``."""
    _positive(peak_flops_per_s=peak_flops_per_s, peak_bytes_per_s=peak_bytes_per_s)
    return max(cost.flops / peak_flops_per_s, cost.bytes_moved / peak_bytes_per_s)


def bound_kind(cost: WorkloadCost, peak_flops_per_s: float, peak_bytes_per_s: float) -> str:
    """``compute`` when the workload's AI reaches the ridge point, else ``memory``."""
    ridge = ridge_point(peak_flops_per_s, peak_bytes_per_s)
    return "compute" if cost.arithmetic_intensity >= ridge else "memory"


def roofline_figures(
    cost: WorkloadCost, latency_s: float, peak_flops_per_s: float, peak_bytes_per_s: float
) -> RooflineFigures:
    """All the roofline figures of one pass of ``cost`` measured at ``latency_s``."""
    achieved = achieved_flops_per_s(cost, latency_s)
    attainable = attainable_flops_per_s(cost.arithmetic_intensity, peak_flops_per_s, peak_bytes_per_s)
    return RooflineFigures(
        achieved_flops_per_s=achieved,
        peak_flops_per_s=peak_flops_per_s,
        peak_bytes_per_s=peak_bytes_per_s,
        share_of_peak=share_of_peak(achieved, peak_flops_per_s),
        attainable_flops_per_s=attainable,
        share_of_roofline=share_of_peak(achieved, attainable) if attainable > 0 else 0.0,
        roofline_bound_s=roofline_bound_s(cost, peak_flops_per_s, peak_bytes_per_s),
        bound_kind=bound_kind(cost, peak_flops_per_s, peak_bytes_per_s),
    )


def _positive(**values: float) -> None:
    for name, value in values.items():
        if not value > 0:
            raise ValueError(f"{name} must be positive, got {value!r}")
