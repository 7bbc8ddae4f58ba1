"""Roofline probes: this machine's measured peaks (GEMM FLOP/s per dtype and library, memory bandwidth)."""
