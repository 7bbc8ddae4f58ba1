"""Fold ``Expand`` nodes whose inputs are constants into initializers, for converters that cannot.

At a batch above 1, the dynamo exporter writes BERT's default ``token_type_ids`` as a constant chain:
the registered buffer, a ``GatherElements`` with a constant index, then an ``Expand`` to ``[batch,
seq]``. onnx2tf turns that constant ``Expand`` into a bare numpy array and fails ("Output tensors of a
Functional model must be the output of a TensorFlow Layer"). Evaluating such an ``Expand`` once (on the
constant nodes it depends on) and storing the result as an
initializer is exact, so the converted model computes what the ONNX graph does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

FOLDED_OPS = frozenset({"Expand"})


def fold_constant_expands(model: Any) -> int:
    """Replace every ``Expand`` of ``model`` (a ModelProto, edited in place) whose inputs derive from
    initializers only by an initializer holding its value; drop the constant nodes left unused.

    Returns the number of nodes folded.
    """
    graph = model.graph
    constant = _constant_names(graph)
    targets = [node for node in graph.node if node.op_type in FOLDED_OPS and node.output[0] in constant]
    if not targets:
        return 0
    values = _evaluate(model, [node.output[0] for node in targets])
    _replace_with_initializers(graph, targets, values)
    _drop_unused_constant_nodes(graph, constant)
    return len(targets)


def _constant_names(graph: Any) -> set[str]:
    """Names of the values computable from initializers alone (graph order is topological)."""
    names = {one.name for one in graph.initializer}
    for node in graph.node:
        if node.input and all(name in names for name in node.input if name):
            names.update(node.output)
    return names


def _evaluate(model: Any, outputs: list[str]) -> list[Any]:
    """The values of ``outputs``, computed node by node on the graph's constant part.

    ``Expand`` and ``GatherElements`` are computed with numpy (ONNX 1.23's reference ``GatherElements``
    fails on a ``[1, n]`` index into a ``[1, m]`` buffer); any other op by ONNX's reference evaluator.
    """
    from onnx import numpy_helper

    values = {one.name: numpy_helper.to_array(one) for one in model.graph.initializer}
    constant = _constant_names(model.graph)
    for node in model.graph.node:
        if all(name in constant for name in node.output):
            results = _run_node(node, [values[name] for name in node.input if name], model.opset_import)
            values.update(zip(node.output, results, strict=True))
    return [values[name] for name in outputs]


def _run_node(node: Any, inputs: list[np.ndarray], opsets: Any) -> list[np.ndarray]:
    """The outputs of one ONNX node on numpy inputs."""
    if node.op_type == "Expand":
        data, shape = inputs
        return [data * np.ones(tuple(int(one) for one in shape), dtype=data.dtype)]
    if node.op_type == "GatherElements":
        axis = next((one.i for one in node.attribute if one.name == "axis"), 0)
        return [np.take_along_axis(inputs[0], inputs[1], axis=axis)]
    import onnx
    from onnx.reference import ReferenceEvaluator

    names = [name for name in node.input if name]
    graph = onnx.helper.make_graph(
        [node],
        "node",
        [onnx.helper.make_empty_tensor_value_info(name) for name in names],
        [onnx.helper.make_empty_tensor_value_info(name) for name in node.output],
    )
    evaluator = ReferenceEvaluator(onnx.helper.make_model(graph, opset_imports=list(opsets)))
    return list(evaluator.run(None, dict(zip(names, inputs, strict=True))))


def _replace_with_initializers(graph: Any, targets: list[Any], values: list[Any]) -> None:
    import onnx

    for node, value in zip(targets, values, strict=True):
        graph.initializer.append(onnx.numpy_helper.from_array(value, node.output[0]))
        graph.node.remove(node)


def _drop_unused_constant_nodes(graph: Any, constant: set[str]) -> None:
    """Remove constant nodes whose outputs nothing reads any more (repeated until none is left)."""
    outputs = {one.name for one in graph.output}
    while True:
        used = {name for node in graph.node for name in node.input} | outputs
        dead = [
            node
            for node in graph.node
            if all(name in constant for name in node.output) and not any(name in used for name in node.output)
        ]
        if not dead:
            return
        for node in dead:
            graph.node.remove(node)
