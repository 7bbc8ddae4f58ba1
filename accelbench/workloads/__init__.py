"""Workloads: model families defined once in PyTorch (one module each)."""
