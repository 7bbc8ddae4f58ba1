"""Stacks: one module per way of executing a model (framework x compiler x platform)."""
