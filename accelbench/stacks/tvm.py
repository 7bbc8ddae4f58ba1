"""The ``tvm`` and ``tvm-tuned`` stacks: the shared ONNX file through TVM Relax to LLVM, run by the Relax VM.

``tvm`` is TVM out of the box, what a user gets without tuning: ``relax.frontend.onnx.from_onnx`` with
the static shapes and dtypes of the example inputs, ``tvm.compile`` with the default pipeline. On CPUs
that pipeline leaves the tensor programs unscheduled (one thread, little vectorisation), so ``tvm`` is
one to two orders of magnitude slower than ONNX Runtime. That is a real result and is reported as is.

``tvm-tuned`` schedules every tensor program with MetaSchedule within a trial budget taken from the
environment variable ``ACCELBENCH_TVM_TRIALS`` (default ``DEFAULT_TRIALS``), spread evenly over the
tuning tasks, with the ``random`` cost model (the default ``xgb`` one needs xgboost). The tuning records
are a JSON database in the run's cache folder, one per (workload, CPU, threads, budget): the first cell of
a workload tunes, the next ones reuse it. The tuning time of this cell is ``tuning_s`` in the details
and is part of ``compile_s`` (0 when the records were reused, e.g. by a re-measured attempt); the
seconds the records took when they were made are ``tuning_records_s``. Tasks whose search space
MetaSchedule cannot build are left untuned and listed in the
details (``untuned_tasks``); candidates are built without importing every tensor intrinsic (see
``build_without_tensor_intrinsics``). MetaSchedule needs ``apache-tvm-ffi==0.1.14.post0``: 0.1.15.post2
segfaults in ``ToJSONGraph``, so ``tvm-tuned`` is unavailable with any other version.

Target: a JSON-dict LLVM target (TVM 0.27 rejects the old ``"llvm -mcpu=..."`` strings) whose ``mcpu``
is LLVM's name of the host CPU (e.g. ``znver5``) and whose ``num-cores`` is ``ctx.threads``. The runtime
thread pool (and MetaSchedule's measuring workers) take ``TVM_NUM_THREADS``, set to ``ctx.threads``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from accelbench.errors import Unsupported
from accelbench.stacks._onnx_inputs import graph_input_names
from accelbench.stacks._torch_device import first_line, precision_of
from accelbench.stacks.base import CellContext, ModelSpec, Session
from accelbench.stacks.onnx_export import OnnxFileStack, export_onnx
from accelbench.workloads.base import Inputs

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

_INSTALL = "accelbench[tvm]"
TRIALS_VARIABLE = "ACCELBENCH_TVM_TRIALS"
DEFAULT_TRIALS = 64
TESTED_FFI = "0.1.14.post0"
"""The apache-tvm-ffi version MetaSchedule works with (0.1.15.post2 segfaults in ToJSONGraph)."""
COST_MODEL = "random"
_MAX_TRIALS_PER_ITERATION = 64
_RECORDS_FILE = "accelbench_tuning.json"
"""Written beside the tuning records: the tasks MetaSchedule could not tune."""
_SKIPPED_PREFIXES = ("Traceback", "File ", "  ")
"""Lines of TVM's error text that are stack frames, not the message."""


class _TvmStack(OnnxFileStack):
    """TVM Relax on CPU from the shared ONNX file; subclasses write ``build`` (untuned or tuned)."""

    install: ClassVar[str] = _INSTALL
    modules: ClassVar[tuple[str, ...]] = ("tvm",)
    distributions: ClassVar[tuple[str, ...]] = ("apache-tvm", "apache-tvm-ffi")

    def prepare(self, model: torch.nn.Module, spec: ModelSpec, ctx: CellContext) -> Session:
        """Export (or reuse) the ONNX file, import it into Relax, (tune,) compile, open a VM."""
        path, export_s = export_onnx(model, spec, ctx.cache_dir)
        os.environ["TVM_NUM_THREADS"] = str(ctx.threads)
        target_dict = target_for(ctx.threads)
        try:
            infer, steps, notes = self.build(path, spec, target_dict, ctx)
        except Unsupported:
            raise
        except Exception as exc:
            raise Unsupported(f"{self.name}: {_failure_line(exc)}") from exc
        details = {
            "threads": str(ctx.threads),
            "target": json.dumps(target_dict),
            "mcpu": str(target_dict["mcpu"]),
            "onnx_file": path.name,
            "export_s": f"{export_s:.6f}",
            **{f"{step}_s": f"{seconds:.6f}" for step, seconds in steps.items()},
            **notes,
        }
        return Session(infer, precision_of(model), export_s + sum(steps.values()), details)

    @abstractmethod
    def build(
        self, path: Path, spec: ModelSpec, target_dict: dict[str, Any], ctx: CellContext
    ) -> tuple[Callable[[Inputs], np.ndarray], dict[str, float], dict[str, str]]:
        """The ``infer`` of the compiled model, the seconds of each step (``import``, ``build``...) and
        notes for the details (how the tensor programs were scheduled)."""


class Tvm(_TvmStack):
    """TVM out of the box: ONNX -> Relax -> ``tvm.compile`` for LLVM, no tuning."""

    name: ClassVar[str] = "tvm"
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "ONNX (from PyTorch)",
        "compiler": "TVM Relax + TIR (default pipeline, untuned), LLVM codegen",
        "platform": "CPU (TVM runtime, Relax VM)",
    }

    def build(
        self, path: Path, spec: ModelSpec, target_dict: dict[str, Any], ctx: CellContext
    ) -> tuple[Callable[[Inputs], np.ndarray], dict[str, float], dict[str, str]]:
        """Import with the weights bound as constants, compile with the default pipeline."""
        import tvm

        start_s = time.perf_counter()
        module, positions = import_onnx(path, spec, keep_params_in_input=False)
        import_s = time.perf_counter() - start_s
        executable = tvm.compile(module, target=tvm.target.Target(target_dict))
        build_s = time.perf_counter() - start_s - import_s
        steps = {"import": import_s, "build": build_s}
        return _make_infer(executable, positions, []), steps, {"schedule": "none (default pipeline)"}


class TvmTuned(_TvmStack):
    """TVM with MetaSchedule: the tensor programs tuned within ``ACCELBENCH_TVM_TRIALS`` trials."""

    name: ClassVar[str] = "tvm-tuned"
    default_trials: ClassVar[int] = DEFAULT_TRIALS
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "ONNX (from PyTorch)",
        "compiler": "TVM Relax + TIR, MetaSchedule auto-tuning, LLVM codegen",
        "platform": "CPU (TVM runtime, Relax VM)",
    }

    def unavailable_reason(self, device: str) -> str | None:
        """Like ``tvm``, and apache-tvm-ffi must be the version MetaSchedule works with."""
        reason = super().unavailable_reason(device)
        if reason is not None:
            return reason
        found = version("apache-tvm-ffi")
        if found != TESTED_FFI:
            return (
                f"apache-tvm-ffi {found} is not the tested {TESTED_FFI} (MetaSchedule segfaults with "
                f"0.1.15.post2; pip install {_INSTALL})"
            )
        return None

    def trials(self) -> int:
        """The MetaSchedule trial budget: ``ACCELBENCH_TVM_TRIALS`` or ``default_trials``."""
        text = os.environ.get(TRIALS_VARIABLE, "").strip()
        if not text:
            return self.default_trials
        if not text.isdigit() or int(text) < 1:
            raise Unsupported(f"{self.name}: {TRIALS_VARIABLE}={text!r} is not a positive integer")
        return int(text)

    def build(
        self, path: Path, spec: ModelSpec, target_dict: dict[str, Any], ctx: CellContext
    ) -> tuple[Callable[[Inputs], np.ndarray], dict[str, float], dict[str, str]]:
        """Import with the weights as inputs, lower, tune (or reuse the records), apply them, compile."""
        import tvm
        from tvm import relax

        target = tvm.target.Target(target_dict)
        start_s = time.perf_counter()
        module, positions = import_onnx(path, spec, keep_params_in_input=True)
        module, params = relax.frontend.detach_params(module)
        with target:
            module = _lowering()(module)
        import_s = time.perf_counter() - start_s
        folder = self.database_dir(path, target_dict, ctx)
        database, tuning_s, records = tuning_database(module, target, folder, self.trials())
        start_s = time.perf_counter()
        with target, database, tvm.transform.PassContext(opt_level=3):
            module = relax.transform.MetaScheduleApplyDatabase(enable_warning=False)(module)
        executable = tvm.compile(module, target=target)
        build_s = time.perf_counter() - start_s
        infer = _make_infer(executable, positions, list(params.get("main", [])))
        notes = {
            "schedule": "metaschedule",
            "trials": str(self.trials()),
            "cost_model": COST_MODEL,
            "tuning_records": f"{folder.name} ({'new' if tuning_s else 'reused'})",
            "tuning_records_s": f"{records.tuning_s:.6f}",
            "untuned_tasks": ",".join(records.untuned) or "none",
        }
        return infer, {"import": import_s, "tuning": tuning_s, "build": build_s}, notes

    def database_dir(self, path: Path, target_dict: dict[str, Any], ctx: CellContext) -> Path:
        """The folder of the tuning records of ``path`` for this CPU, thread count and budget."""
        key = f"{path.stem}-{target_dict['mcpu']}-{ctx.threads}t-{self.trials()}trials"
        return ctx.cache_dir / "tvm" / key


def target_for(threads: int) -> dict[str, Any]:
    """The LLVM target as a JSON dict: the host CPU's LLVM name as ``mcpu``, ``threads`` cores."""
    return {"kind": "llvm", "mcpu": host_cpu(), "num-cores": threads}


def host_cpu() -> str:
    """LLVM's name of this CPU (``znver4``...), from TVM's LLVM; else from TVM's device detection."""
    import tvm

    try:
        return str(tvm.target.codegen.llvm_get_system_cpu())
    except Exception:  # an LLVM without the query: ask the device detector
        return str(tvm.target.Target.from_device("cpu").attrs["mcpu"])


def import_onnx(path: Path, spec: ModelSpec, keep_params_in_input: bool) -> tuple[Any, list[int]]:
    """The Relax module of the ONNX file (static shapes and dtypes from the example inputs), and the
    positions in ``spec.input_names`` of the graph's inputs (the exporter drops unused ones)."""
    import onnx
    from tvm.relax.frontend.onnx import from_onnx

    proto = onnx.load(str(path))
    names = graph_input_names(proto.graph)
    positions = [spec.input_names.index(name) for name in names if name in spec.input_names]
    if len(positions) != len(names):
        raise Unsupported(f"tvm: ONNX inputs {names} are not the workload's {list(spec.input_names)}")
    examples = {name: spec.example[position] for name, position in zip(names, positions, strict=True)}
    shapes = {name: list(array.shape) for name, array in examples.items()}
    dtypes = {name: str(array.dtype) for name, array in examples.items()}
    module = from_onnx(proto, shape_dict=shapes, dtype_dict=dtypes, keep_params_in_input=keep_params_in_input)
    return module, positions


def _lowering() -> Any:
    """The passes before tuning: inference-mode decompositions, then legalised and fused tensor programs."""
    import tvm
    from tvm import relax

    return tvm.transform.Sequential(
        [
            relax.transform.DecomposeOpsForInference(),
            relax.transform.CanonicalizeBindings(),
            relax.get_pipeline("zero"),
        ]
    )


@dataclass(frozen=True, slots=True)
class TuningRecords:
    """What a records folder says of its tuning: the seconds it took and the tasks left untuned."""

    tuning_s: float
    untuned: list[str]


def tuning_database(module: Any, target: Any, folder: Path, trials: int) -> tuple[Any, float, TuningRecords]:
    """The tuning records for ``module`` in ``folder``, the seconds spent tuning now (0.0 when reused)
    and what the folder records: how long its tuning took and the tasks left untuned (MetaSchedule
    could not build their search space).

    Tuning writes into a temporary folder that is renamed into place when done, so an interrupted
    tuning is never mistaken for a finished one.
    """
    from tvm.s_tir import meta_schedule as ms

    tuning_s = 0.0
    if not folder.is_dir():
        folder.parent.mkdir(parents=True, exist_ok=True)
        temp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
        shutil.rmtree(temp, ignore_errors=True)
        start_s = time.perf_counter()
        untuned = _tune(module, target, temp, trials)
        tuning_s = time.perf_counter() - start_s
        (temp / _RECORDS_FILE).write_text(json.dumps({"tuning_s": tuning_s, "untuned": untuned}))
        os.replace(temp, folder)
    made = json.loads((folder / _RECORDS_FILE).read_text())
    records = TuningRecords(float(made["tuning_s"]), list(made["untuned"]))
    return ms.database.JSONDatabase(work_dir=str(folder), allow_missing=False), tuning_s, records


def _tune(module: Any, target: Any, work_dir: Path, trials: int) -> list[str]:
    """Tune the tasks of ``module`` with ``trials`` trials in all, spread evenly; return the untuned ones.

    MetaSchedule raises ScheduleError for the whole run when it cannot build one task's search space
    (seen on a tiny BERT's masked attention), so such tasks are left out and stay unscheduled.
    """
    from tvm.s_tir import meta_schedule as ms

    work_dir.mkdir(parents=True)
    extracted = ms.relax_integration.extract_tasks(module, target, params={})
    contexts, weights = ms.relax_integration.extracted_tasks_to_tune_contexts(extracted, str(work_dir))
    tunable = [_has_search_space(context) for context in contexts]
    kept = [(context, weight) for context, weight, ok in zip(contexts, weights, tunable, strict=True) if ok]
    untuned = [context.task_name for context, ok in zip(contexts, tunable, strict=True) if not ok]
    if not kept:
        return untuned
    per_task = max(1, trials // len(kept))
    ms.tune_tasks(
        tasks=[context for context, _ in kept],
        task_weights=[weight for _, weight in kept],
        work_dir=str(work_dir),
        max_trials_global=trials,
        max_trials_per_task=per_task,
        num_trials_per_iter=min(per_task, _MAX_TRIALS_PER_ITERATION),
        builder=ms.builder.LocalBuilder(
            max_workers=kept[0][0].num_threads, f_build=build_without_tensor_intrinsics
        ),
        database="json",
        cost_model=COST_MODEL,
    )
    return untuned


def build_without_tensor_intrinsics(module: Any, target: Any, _params: Any) -> Any:
    """MetaSchedule's default build of a candidate, minus its ``import tvm.s_tir.tensor_intrin``.

    That import registers every tensor intrinsic of every target (18 s on the project machine) and the
    builder restarts its worker processes for every batch, so it dominated tuning time. fp32 CPU
    schedules do not tensorize, and a tensorized block already carries its implementation.
    """
    from tvm.driver import build
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    return build(RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(module), target=target)


def _has_search_space(context: Any) -> bool:
    """Whether MetaSchedule can generate the design space of a task (milliseconds per task)."""
    try:
        context.generate_design_space()
    except Exception as exc:  # a ScheduleError here would abort the whole tuning run
        logger.warning("tvm-tuned: task %s left untuned: %s", context.task_name, _failure_line(exc))
        return False
    return True


def _failure_line(exc: BaseException) -> str:
    """``Type: message`` of TVM's error, skipping the stack frames TVM puts in the text."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    lines = [line for line in str(exc).splitlines() if line.strip()]
    message = [line.strip() for line in lines if not line.startswith(_SKIPPED_PREFIXES)]
    return f"{type(exc).__name__}: {message[0]}" if message else first_line(exc)


def _make_infer(executable: Any, positions: list[int], params: list[Any]) -> Callable[[Inputs], np.ndarray]:
    """``infer`` on a Relax VM: the kept inputs as TVM tensors (then the weights, when tuned)."""
    import tvm
    from tvm import relax

    main = relax.VirtualMachine(executable, tvm.cpu())["main"]

    def infer(inputs: Inputs) -> np.ndarray:
        output = main(*(tvm.runtime.tensor(inputs[position]) for position in positions), *params)
        return np.asarray(output.numpy())

    return infer
