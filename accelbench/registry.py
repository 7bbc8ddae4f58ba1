"""Explicit name -> "module:Class" tables for workloads and stacks, imported lazily.

Adding a stack is one module plus one line in ``STACKS``; a third-party package adds one without touching
accelbench through the entry-point groups ``accelbench.stacks``, ``accelbench.generation_stacks`` (a
``accelbench.generation.base.GenerationStack``: it runs the LLM workloads) and ``accelbench.workloads``.
Names are resolved to references in the parent process; the cell subprocess imports the reference, so a
planted test stack or a plugin runs exactly like a built-in one.
"""

from __future__ import annotations

import functools
import importlib
import json
import logging
import os
import subprocess
import sys
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from accelbench.errors import UserError

log = logging.getLogger(__name__)

WORKLOADS: Mapping[str, str] = {
    "resnet50": "accelbench.workloads.resnet50:ResNet50",
    "bert-base": "accelbench.workloads.bert:BertBase",
    "minilm-l6": "accelbench.workloads.minilm:MiniLM",
    "gnn-sage": "accelbench.workloads.expressive.gnn_sage:GnnSage",
    "dlrm-bags": "accelbench.workloads.expressive.dlrm_bags:DlrmBags",
    "moe-topk": "accelbench.workloads.expressive.moe_topk:MoeTopk",
    "ssm-scan": "accelbench.workloads.expressive.ssm_scan:SsmScan",
    "dynamic-seq": "accelbench.workloads.expressive.dynamic_seq:DynamicSeq",
    "digits-resnet": "accelbench.training.workloads:DigitsResNet",
    "topics-minilm": "accelbench.training.workloads:TopicsMiniLM",
    "tiny-llama": "accelbench.generation.workload:TinyLlama",
    "smollm2-135m": "accelbench.generation.workload:SmolLm2",
}

STACKS: Mapping[str, str] = {
    "null": "accelbench.stacks.null:NullStack",
    "torch-eager": "accelbench.stacks.torch_eager:TorchEager",
    "torch-inductor": "accelbench.stacks.torch_inductor:TorchInductor",
    "onnxruntime": "accelbench.stacks.onnxruntime:OnnxRuntime",
    "openvino": "accelbench.stacks.openvino:OpenVino",
    "openvino-bf16": "accelbench.stacks.openvino:OpenVinoBf16",
    "iree": "accelbench.stacks.iree:Iree",
    "tvm": "accelbench.stacks.tvm:Tvm",
    "tvm-tuned": "accelbench.stacks.tvm:TvmTuned",
    "jax-xla": "accelbench.stacks.jax_xla:JaxXla",
    "tensorflow": "accelbench.stacks.tensorflow:TensorFlow",
    "litert": "accelbench.stacks.litert:LiteRt",
    "opencl": "accelbench.stacks.opencl:OpenCl",
    "glow": "accelbench.stacks.seeds:Glow",
    "plaidml": "accelbench.stacks.seeds:PlaidMl",
    "oneflow": "accelbench.stacks.seeds:OneFlow",
    "nvfuser": "accelbench.stacks.seeds:NvFuser",
    "onnxruntime@ray-serve": "accelbench.serving.ray_serve:RayServe",
    "onnxruntime@ray-serve-nobatch": "accelbench.serving.ray_serve:RayServeNoBatch",
    "onnxruntime@triton": "accelbench.serving.triton:Triton",
    "onnxruntime@triton-nobatch": "accelbench.serving.triton:TritonNoBatch",
    "onnxruntime@torchserve": "accelbench.serving.torchserve:TorchServe",
    "onnxruntime@torchserve-nobatch": "accelbench.serving.torchserve:TorchServeNoBatch",
    "onnxruntime@url": "accelbench.serving.remote:RemoteServed",
}

GENERATING_STACKS: Mapping[str, str] = {
    "torch-eager": "accelbench.generation.torch_stacks:TorchEager",
    "torch-compiled": "accelbench.generation.torch_stacks:TorchCompiled",
    "ort-genai": "accelbench.generation.ort_genai:OrtGenai",
    "ort-genai-int4": "accelbench.generation.ort_genai:OrtGenaiInt4",
    "openvino-genai": "accelbench.generation.openvino_genai:OpenvinoGenai",
    "openvino-genai-gguf": "accelbench.generation.openvino_genai:OpenvinoGenaiGguf",
    "llama-cpp": "accelbench.generation.llama_cpp:LlamaCpp",
    "llama-cpp-f32": "accelbench.generation.llama_cpp:LlamaCppF32",
}
"""The stacks that generate (``accelbench.generation.base.GenerationStack``): they run the generative
workloads (``tiny-llama``, ``smollm2-135m``); a name in both tables is the same software both ways."""

ENDPOINT_STACKS: Mapping[str, str] = {
    "llm@url": "accelbench.endpoint.stack:UrlEndpoint",
    "llm@transformers": "accelbench.endpoint.stack:TransformersEndpoint",
    "llm@transformers-cb": "accelbench.endpoint.stack:TransformersCbEndpoint",
    "llm@llamacpp": "accelbench.endpoint.stack:LlamaCppEndpoint",
    "llm@vllm": "accelbench.endpoint.stack:VllmEndpoint",
    "llm@sglang": "accelbench.endpoint.stack:SglangEndpoint",
}
"""The endpoint stacks (``accelbench.endpoint.stack``): an LLM served behind an OpenAI-compatible
endpoint, measured as a curve; they run the generative workloads like the generating stacks."""

DRIVERS: Mapping[str, str] = {
    "loadgen": "accelbench.cell.inference:measure",
    "tokens": "accelbench.cell.generation:measure",
    "train-to-quality": "accelbench.training.measure:measure",
    "endpoint": "accelbench.endpoint.cell:measure",
    "sessions": "accelbench.sessions.cell:measure",
}
"""The cell drivers: name -> ``module:function`` taking the ``CellSpec`` and returning its
``accelbench.outcome.Outcome``. A workload names its driver (``driver``, a class attribute); the planner
resolves it once (``driver_of``; a stack may name its own, ``stack_driver``) and the cell process calls
it. Adding a driver is its module, one line here and the workloads (or stacks) that name it
(``docs/adding-a-driver.md``); there is no plugin group for drivers (``_GROUPS``)."""

SETTINGS: Mapping[str, str] = {
    "loadgen": "accelbench.cell.loadgen_settings:LoadgenSettings",
    "tokens": "accelbench.cell.tokens_settings:TokensSettings",
    "train-to-quality": "accelbench.training.settings:TrainingSettings",
    "endpoint": "accelbench.endpoint.settings:EndpointSettings",
    "sessions": "accelbench.sessions.settings:SessionSettings",
}
"""Driver name -> its settings record (``module:Class``, ``accelbench.settings``): the run's knobs the
driver reads, built in the parent; the same names as ``DRIVERS``."""

BODIES: Mapping[str, str] = {
    "loadgen": "accelbench.cell.loadgen_body:LoadgenBody",
    "tokens": "accelbench.cell.tokens_body:TokensBody",
    "train-to-quality": "accelbench.training.body:TrainingBody",
    "endpoint": "accelbench.endpoint.body:EndpointBody",
    "sessions": "accelbench.sessions.body:SessionsBody",
}
"""Driver name -> its body record (``module:Class``, ``accelbench.outcome.Body``): the parent reads a cell
process's outcome document with it (``accelbench.outcome.Outcome.from_dict``); the same names as
``DRIVERS``."""

DEFAULT_DRIVER = "loadgen"
"""The driver of a workload that names none (and of one that does not load: its cells record why)."""

_GROUPS = {
    "workload": "accelbench.workloads",
    "stack": "accelbench.stacks",
    "generating stack": "accelbench.generation_stacks",
    "endpoint stack": "accelbench.endpoint_stacks",
}
_BUILTIN = {
    "workload": WORKLOADS,
    "stack": STACKS,
    "generating stack": GENERATING_STACKS,
    "endpoint stack": ENDPOINT_STACKS,
    "driver": DRIVERS,
}
"""The plugin groups. Drivers have none: a driver judges its cells (audits, quality gate, status), so a
plugin that brought its own could rank a stack no audit ever saw; a new driver is a built-in row."""


def table(kind: str) -> dict[str, str]:
    """Built-in and plugin entries of ``kind`` (``workload``, ``stack``, ``generating stack`` or
    ``driver``, built-in only): name -> reference. A plugin cannot replace a built-in name."""
    merged = dict(_BUILTIN[kind])
    for entry in entry_points(group=_GROUPS[kind]) if kind in _GROUPS else ():
        merged.setdefault(entry.name, entry.value)
    return merged


def resolve(kind: str, names: tuple[str, ...]) -> dict[str, str]:
    """References for ``names``; an unknown name is a UserError listing the known ones."""
    known = table(kind)
    unknown = [name for name in names if name not in known]
    if unknown:
        raise UserError(f"unknown {kind} {', '.join(unknown)!s}; known: {', '.join(sorted(known))}")
    return {name: known[name] for name in names}


def driver_of(workload_ref: str) -> str:
    """The name of the driver the workload ``workload_ref`` declares (``DEFAULT_DRIVER`` when it declares
    none or does not load: its cells are recorded with the reason); UserError for an unknown driver."""
    try:
        name = str(getattr(instantiate(workload_ref), "driver", DEFAULT_DRIVER))
    except Exception:  # a workload that does not load is recorded per cell
        return DEFAULT_DRIVER
    resolve("driver", (name,))
    return name


def driver_name(driver_ref: str) -> str:
    """The name of the driver whose reference is ``driver_ref`` (drivers are built-in only); UserError
    for a reference no driver has."""
    names = [name for name, reference in DRIVERS.items() if reference == driver_ref]
    if not names:
        raise UserError(f"no driver is {driver_ref[:120]!r}; known: {', '.join(sorted(DRIVERS))}")
    return names[0]


def is_builtin(reference: str) -> bool:
    """Whether ``reference`` is one of accelbench's own tables' (never a plugin's). A plugin's module is
    never imported in the runner, which holds the run's input seed (``plugin_declarations``)."""
    return any(reference in built.values() for built in _BUILTIN.values())


_DECLARATIONS = """
import json, sys
from accelbench.registry import load
found = load(sys.argv[1])
print()
print(json.dumps({"driver": getattr(found, "driver", None), "computes": getattr(found, "computes", True)}))
"""


@functools.lru_cache(maxsize=256)
def plugin_declarations(reference: str) -> tuple[str | None, bool]:
    """A plugin stack's declared driver and ``computes``, read in a fresh interpreter of its own (its
    module's import-time code never runs in the runner); (None, True) when it does not load."""
    path = os.pathsep.join(os.path.abspath(p) for p in sys.path if p)
    try:
        done = subprocess.run(
            [sys.executable, "-c", _DECLARATIONS, reference],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": path},
        )
        declared = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else {}
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        declared = {}
    driver = declared.get("driver")
    return (str(driver) if driver else None), bool(declared.get("computes", True))


def stack_driver(stack_ref: str) -> str | None:
    """The driver a stack class declares for its cells (``driver``: a stack that is measured its own
    way, such as a served model's endpoint), None when the workload's driver measures it (or the stack
    does not load: its cells are recorded unavailable). A plugin's stack is asked in a process of its
    own (``plugin_declarations``)."""
    if not is_builtin(stack_ref):
        return plugin_declarations(stack_ref)[0]
    try:
        declared = getattr(load(stack_ref), "driver", None)
    except Exception:  # a stack that does not import is recorded per cell
        return None
    return str(declared) if declared else None


def is_served(name: str) -> bool:
    """Whether ``name`` is a served deployment (``<stack>@<server>``, ``accelbench.serving``)."""
    return "@" in name


def all_stack_names() -> tuple[str, ...]:
    """What ``--stacks all`` means: every inference stack (plugins included) but the served deployments
    (each starts a server per cell: name them, or use ``--serve``), then the generating-only ones."""
    inference = [name for name in table("stack") if not is_served(name)]
    return (*inference, *(name for name in table("generating stack") if name not in inference))


def resolve_any_stack(names: tuple[str, ...]) -> None:
    """UserError for a name that is neither an inference nor a generating stack."""
    known = {*table("stack"), *table("generating stack"), *table("endpoint stack")}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise UserError(f"unknown stack {', '.join(unknown)!s}; known: {', '.join(sorted(known))}")


def load(reference: str) -> Any:
    """Import ``module:attribute`` and return the attribute."""
    module_name, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def named(kind: str, name: str) -> Any:
    """An instance of the ``kind`` entry ``name`` (built-in or plugin); UserError listing the known ones."""
    return instantiate(resolve(kind, (name,))[name])


def instantiate(reference: str) -> Any:
    """An instance of the class named by ``reference``."""
    return load(reference)()
