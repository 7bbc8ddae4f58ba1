"""The inputs of an exported ONNX graph, matched to the workload's input names.

The exporter drops model inputs the graph does not use, so a stack that feeds an ONNX file (or what a
converter made of it) takes the workload's inputs at the positions found here, in graph order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from accelbench.errors import Unsupported
from accelbench.stacks.base import ModelSpec


def graph_input_names(graph: Any) -> list[str]:
    """Names of the inputs of an ONNX ``graph`` that are not initializers (weights), in graph order."""
    weights = {one.name for one in graph.initializer}
    return [one.name for one in graph.input if one.name not in weights]


def input_positions(onnx_file: Path, spec: ModelSpec) -> list[tuple[int, str]]:
    """(position in ``spec.input_names``, name) of each ONNX graph input (the exporter drops unused ones).

    Raises Unsupported naming the graph inputs that are not the workload's.
    """
    import onnx

    names = graph_input_names(onnx.load(str(onnx_file), load_external_data=False).graph)
    unknown = [name for name in names if name not in spec.input_names]
    if unknown:
        raise Unsupported(f"ONNX inputs {', '.join(unknown)} are not the workload's inputs")
    return [(spec.input_names.index(name), name) for name in names]
