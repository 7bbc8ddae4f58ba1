"""The model as a flat list of ATen calls: ``torch.export`` once, then walked by the stacks that lower it.

``export_plan`` runs ``torch.export.export`` on the workload's example inputs and decomposes the program
to the Core ATen opset (a documented, stable set of about 180 ops), so a lowering table written against
it covers any model whose ops decompose into it. The result is a ``GraphPlan``: the lifted weights
(parameters, buffers, constants) as numpy arrays, where the user inputs go, and one ``Step`` per ATen
call with its arguments, references to earlier values (``Ref``) and the shape and dtype torch inferred
for its output. ``evaluate`` walks the steps with a caller-supplied ``call`` per step, so the same walk
traces a JAX function (jax-xla) or schedules OpenCL kernels (opencl).
"""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from accelbench.errors import Unsupported
from accelbench.stacks._torch_device import first_line
from accelbench.stacks.base import ModelSpec

if TYPE_CHECKING:
    import torch

GETITEM = "getitem"
IGNORED_OPS = frozenset(
    {"aten._assert_tensor_metadata", "aten._assert_scalar", "aten.sym_constrain_range_for_size"}
)
"""Runtime assertions torch.export inserts; they compute nothing and are skipped."""


@dataclass(frozen=True, slots=True)
class Ref:
    """A reference to the value of an earlier placeholder or step, by its node name."""

    name: str


@dataclass(frozen=True, slots=True)
class TensorMeta:
    """Shape and dtype (numpy name, e.g. ``float32``) that torch inferred for a tensor."""

    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True, slots=True)
class Step:
    """One ATen call: ``key`` is the op without overload (``aten.addmm``), ``target`` the full name."""

    name: str
    key: str
    target: str
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    meta: Any
    """``TensorMeta`` of the output, a tuple of them (or None) for multi-output ops, None otherwise."""


@dataclass(frozen=True, slots=True)
class GraphPlan:
    """The exported program in plain data: placeholders, weights, steps and the output reference."""

    placeholders: tuple[str, ...]
    weight_slots: tuple[int, ...]
    weights: tuple[np.ndarray, ...]
    input_slots: tuple[int, ...]
    steps: tuple[Step, ...]
    output: Ref

    def bind(self, weights: Sequence[Any], inputs: Sequence[Any]) -> list[Any]:
        """Placeholder values in graph order from the weights and the user inputs."""
        values: list[Any] = [None] * len(self.placeholders)
        for slot, value in zip(self.weight_slots, weights, strict=True):
            values[slot] = value
        for slot, value in zip(self.input_slots, inputs, strict=True):
            values[slot] = value
        return values

    def op_keys(self) -> list[str]:
        """The distinct ops of the graph in order of first use (getitem and assertions left out)."""
        keys = (step.key for step in self.steps if step.key != GETITEM and step.key not in IGNORED_OPS)
        return list(dict.fromkeys(keys))


def export_plan(model: torch.nn.Module, spec: ModelSpec, stack: str) -> tuple[GraphPlan, float]:
    """The ``GraphPlan`` of ``model`` on ``spec.example`` and the seconds spent exporting it.

    Raises Unsupported("<stack>: torch.export failed: ...") when torch cannot export the model.
    """
    import torch

    tensors = tuple(torch.from_numpy(array) for array in spec.example)
    start_s = time.perf_counter()
    chatter = io.StringIO()
    try:
        with contextlib.redirect_stdout(chatter), contextlib.redirect_stderr(chatter):
            program = torch.export.export(model.eval(), tensors).run_decompositions()
    except Exception as exc:
        raise Unsupported(f"{stack}: torch.export failed: {first_line(exc)}") from exc
    plan = _plan_of(program, stack)
    return plan, time.perf_counter() - start_s


def first_missing_op(plan: GraphPlan, table: Mapping[str, object]) -> str | None:
    """The first op of ``plan`` that ``table`` has no entry for, or None."""
    return next((key for key in plan.op_keys() if key not in table), None)


def evaluate(
    plan: GraphPlan, values: Sequence[Any], call: Callable[[Step, tuple[Any, ...], dict[str, Any]], Any]
) -> Any:
    """Walk the steps in order with ``call(step, args, kwargs)`` (references resolved); return the output."""
    env: dict[str, Any] = dict(zip(plan.placeholders, values, strict=True))
    for step in plan.steps:
        args = _resolve(step.args, env)
        if step.key == GETITEM:
            env[step.name] = args[0][args[1]]
        elif step.key not in IGNORED_OPS:
            env[step.name] = call(step, args, {key: _resolve(one, env) for key, one in step.kwargs.items()})
    return env[plan.output.name]


def _resolve(value: Any, env: Mapping[str, Any]) -> Any:
    """``value`` with every ``Ref`` replaced by its value in ``env`` (inside tuples too)."""
    if isinstance(value, Ref):
        return env[value.name]
    if isinstance(value, tuple):
        return tuple(_resolve(one, env) for one in value)
    return value


def _plan_of(program: torch.export.ExportedProgram, stack: str) -> GraphPlan:
    """Turn the exported program into a ``GraphPlan`` (weights copied out as numpy arrays)."""
    from torch.export.graph_signature import InputKind

    placeholders: list[str] = []
    weight_slots: list[int] = []
    weights: list[np.ndarray] = []
    input_slots: list[int] = []
    for slot, input_spec in enumerate(program.graph_signature.input_specs):
        placeholders.append(input_spec.arg.name)
        if input_spec.kind == InputKind.USER_INPUT:
            input_slots.append(slot)
        elif input_spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            weight_slots.append(slot)
            weights.append(_weight(program, str(input_spec.target)))
        else:
            raise Unsupported(f"{stack}: exported input of kind {input_spec.kind.name} is not supported")
    try:
        steps = tuple(_step(node) for node in program.graph_module.graph.nodes if node.op == "call_function")
    except DataDependentShape as exc:
        raise Unsupported(f"{stack}: {exc}") from None
    return GraphPlan(
        placeholders=tuple(placeholders),
        weight_slots=tuple(weight_slots),
        weights=tuple(weights),
        input_slots=tuple(input_slots),
        steps=steps,
        output=_output(program, stack),
    )


def _weight(program: torch.export.ExportedProgram, target: str) -> np.ndarray:
    """A lifted parameter, buffer or constant as a numpy array of its own (not sharing torch's memory)."""
    tensor = program.state_dict[target] if target in program.state_dict else program.constants[target]
    return tensor.detach().cpu().numpy().copy()


def _output(program: torch.export.ExportedProgram, stack: str) -> Ref:
    """The reference to the program's one user output."""
    from torch.export.graph_signature import OutputKind

    outputs = [one for one in program.graph_signature.output_specs if one.kind == OutputKind.USER_OUTPUT]
    if len(outputs) != 1:
        raise Unsupported(f"{stack}: the model returns {len(outputs)} outputs; one tensor is expected")
    return Ref(outputs[0].arg.name)


def op_key(target: Any) -> str:
    """``aten.add`` for ``torch.ops.aten.add.Tensor``; ``getitem`` for ``operator.getitem``."""
    packet = getattr(target, "overloadpacket", None)
    if packet is not None:
        return str(packet)
    return str(getattr(target, "__name__", target))


def _step(node: torch.fx.Node) -> Step:
    return Step(
        name=node.name,
        key=op_key(node.target),
        target=str(node.target),
        args=tuple(_freeze(one) for one in node.args),
        kwargs={key: _freeze(one) for key, one in node.kwargs.items()},
        meta=_meta(node.meta.get("val"), op_key(node.target)),
    )


def _freeze(value: Any) -> Any:
    """Node -> ``Ref``, lists -> tuples (recursively); other arguments (ints, dtypes, ...) unchanged."""
    import torch

    if isinstance(value, torch.fx.Node):
        return Ref(value.name)
    if isinstance(value, list | tuple):
        return tuple(_freeze(one) for one in value)
    return value


class DataDependentShape(Exception):
    """An op's output shape depends on input values (``aten.nonzero``, routing): no static plan."""


def _meta(value: Any, op: str) -> Any:
    """``TensorMeta`` of a (fake) tensor, a tuple of metas for a tuple, None for anything else."""
    import torch

    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")
        return TensorMeta(tuple(_static_size(size, op) for size in value.shape), dtype)
    if isinstance(value, list | tuple):
        return tuple(_meta(one, op) for one in value)
    return None


def _static_size(size: Any, op: str) -> int:
    """``size`` as an int; DataDependentShape when it is a symbol only known at run time."""
    try:
        return int(size)
    except Exception:  # torch raises GuardOnDataDependentSymNode (a RuntimeError) for unbacked symbols
        raise DataDependentShape(f"data-dependent shape {size} from {op}") from None
