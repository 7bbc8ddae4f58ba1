"""One process's part of training to quality: prepare (compile, warm up), then timed runs with MLPerf logs.

A run: reset the weights from its seed, ``init_start``/``init_stop``, then ``run_start``, epochs of
training each followed by an evaluation on the held-out set, until the target is reached (``run_stop``
status ``success``) or ``max_epochs`` ran out (``aborted``: the run counts as unconverged). Evaluation is
inside the timed region, as in MLPerf. Data parallel: every process takes its share of each global batch
(``rank::world``), gradients are averaged by DDP, and the held-out set is split the same way with the
correct answers summed over processes, so every process takes the same stop decision.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from accelbench.errors import Unsupported
from accelbench.head import Energy
from accelbench.training import precision
from accelbench.training.data import Dataset
from accelbench.training.meter import RunMeter, own_cpu_s
from accelbench.training.mllog import RunLog, header_facts
from accelbench.training.workloads import Recipe, TrainingWorkload

STACKS = tuple(precision.DECLARED)
"""Stacks with a training path: those that declare a training precision."""
WARMUP_STEPS = 2


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One timed run: its seed, time from run_start to run_stop, whether it reached the target, and when."""

    seed: int
    time_to_quality_s: float
    converged: bool
    quality: float
    """Held-out top-1 at the last evaluation."""
    epochs: int
    samples: int
    """Training samples processed by all processes together."""
    log_file: str = ""
    energy: Energy | None = None


@dataclass(frozen=True, slots=True)
class Group:
    """This process's place in the data-parallel group (``world == 1``: no torch.distributed)."""

    rank: int = 0
    world: int = 1

    def sum(self, value: torch.Tensor) -> torch.Tensor:
        """``value`` summed over the group."""
        if self.world > 1:
            torch.distributed.all_reduce(value, op=torch.distributed.ReduceOp.SUM)
        return value

    def barrier(self) -> None:
        """Wait for every process of the group."""
        if self.world > 1:
            torch.distributed.barrier()


def check_stack(stack: str) -> None:
    """Unsupported for a stack without a training path."""
    precision.declared(stack)


class Trainer:
    """A workload's model on one process, ready to run timed runs to the target."""

    def __init__(
        self, workload: TrainingWorkload, size: str, data: Dataset, stack: str, device: str, group: Group
    ):
        self.precision = precision.apply(stack)  # before the model exists: what the stack declares, only
        self.workload, self.size, self.group, self.device = workload, size, group, device
        self.recipe: Recipe = workload.recipe(size)
        if self.recipe.global_batch_size % group.world:
            raise Unsupported(
                f"global batch {self.recipe.global_batch_size} does not split over {group.world}"
            )
        self.batch = self.recipe.global_batch_size // group.world
        self.data = _to_device(data, device)
        self.eval_index = torch.arange(group.rank, data.eval_samples, group.world, device=device)
        self.model = workload.build_model(size, 0).to(device)
        self.step_model = self._wrap(stack)
        self.compile_s = self._warm_up()

    def _wrap(self, stack: str) -> nn.Module:
        wrapped: nn.Module = self.model
        if self.group.world > 1:
            wrapped = nn.parallel.DistributedDataParallel(wrapped)
        if stack == "torch-inductor":
            wrapped = torch.compile(wrapped, backend="inductor")  # type: ignore[assignment]
        return wrapped

    def _warm_up(self) -> float:
        """Train and evaluate on random inputs of the real shapes, so compilation happens before timing."""
        start = time.perf_counter()
        optimizer = self._optimizer()
        shape = (self.batch, *self.data.train_x.shape[1:])
        for _ in range(WARMUP_STEPS):
            inputs = torch.rand(shape, device=self.device)
            labels = torch.randint(0, self.data.classes, (self.batch,), device=self.device)
            self._step(optimizer, inputs, labels)
        self._correct(torch.rand_like(self.data.eval_x[self.eval_index]))
        return time.perf_counter() - start

    def _optimizer(self) -> torch.optim.Optimizer:
        recipe = self.recipe
        return torch.optim.SGD(
            self.model.parameters(),
            lr=recipe.learning_rate,
            momentum=recipe.momentum,
            nesterov=True,
            weight_decay=recipe.weight_decay,
        )

    def _step(self, optimizer: torch.optim.Optimizer, inputs: torch.Tensor, labels: torch.Tensor) -> None:
        self.step_model.train()
        loss = nn.functional.cross_entropy(self.step_model(inputs), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    def _correct(self, inputs: torch.Tensor) -> torch.Tensor:
        self.step_model.eval()
        with torch.no_grad():
            return self.step_model(inputs).argmax(dim=1)

    def evaluate(self) -> float:
        """Top-1 on the whole held-out set (every process judges its share; the counts are summed)."""
        predicted = self._correct(self.data.eval_x[self.eval_index])
        right = (predicted == self.data.eval_y[self.eval_index]).sum().to(torch.float64).cpu()
        return float(self.group.sum(right).item()) / self.data.eval_samples

    def train_epoch(self, optimizer: torch.optim.Optimizer, generator: torch.Generator) -> int:
        """One pass over the training set in full global batches; returns the global samples processed."""
        order = torch.randperm(self.data.train_samples, generator=generator)
        size, steps = self.recipe.global_batch_size, self.data.train_samples // self.recipe.global_batch_size
        for step in range(steps):
            mine = order[step * size : (step + 1) * size][self.group.rank :: self.group.world].to(self.device)
            self._step(optimizer, self.data.train_x[mine], self.data.train_y[mine])
        return steps * size

    def reset(self, seed: int) -> torch.optim.Optimizer:
        """Weights (and batch-norm statistics) of a fresh model from ``seed``, and a fresh optimizer."""
        fresh = self.workload.build_model(self.size, seed)
        self.model.load_state_dict(fresh.state_dict())
        return self._optimizer()

    def run(self, seed: int, log_path: Path | None, platform: str, meter: RunMeter | None) -> RunRecord:
        """One timed run to the target; the log is written and the meter read by rank 0 only."""
        log = RunLog(log_path if self.group.rank == 0 else None)
        try:
            return self._logged_run(seed, log, platform, meter)
        finally:
            log.close()

    def _group_cpu_s(self) -> float:
        return float(self.group.sum(torch.tensor(own_cpu_s(), dtype=torch.float64)).item())

    def _logged_run(self, seed: int, log: RunLog, platform: str, meter: RunMeter | None) -> RunRecord:
        recipe, data = self.recipe, self.data
        log.event("cache_clear", True)
        log.start("init_start")
        samples = (data.train_samples, data.eval_samples)
        log.header(
            header_facts(
                self.workload.mlperf_benchmark,
                platform,
                seed,
                recipe.global_batch_size,
                recipe.learning_rate,
                samples,
                self.precision.name,
            )
        )
        optimizer = self.reset(seed)
        generator = torch.Generator().manual_seed(seed)
        log.end("init_stop")
        self.group.barrier()
        cpu_s = self._group_cpu_s()
        if meter is not None:
            meter.begin(f"run-{seed}", cpu_s)
        log.start("run_start")
        start = time.perf_counter()
        quality, processed, epoch, converged = 0.0, 0, 0, False
        while epoch < recipe.max_epochs and not converged:
            epoch += 1
            processed += self._logged_epoch(log, epoch, optimizer, generator)
            quality = self._logged_eval(log, epoch, processed)
            converged = quality >= recipe.target
        _sync(self.device)
        elapsed_s = time.perf_counter() - start
        log.end("run_stop", status="success" if converged else "aborted", epoch_num=epoch)
        cpu_s = self._group_cpu_s()
        used = meter.end(f"run-{seed}", cpu_s, processed) if meter is not None else None
        path = str(log.path) if log.path else ""
        return RunRecord(
            seed=seed,
            time_to_quality_s=elapsed_s,
            converged=converged,
            quality=quality,
            epochs=epoch,
            samples=processed,
            log_file=path,
            energy=used,
        )

    def _logged_epoch(
        self, log: RunLog, epoch: int, optimizer: torch.optim.Optimizer, gen: torch.Generator
    ) -> int:
        log.start("epoch_start", epoch_num=epoch)
        processed = self.train_epoch(optimizer, gen)
        log.end("epoch_stop", epoch_num=epoch)
        return processed

    def _logged_eval(self, log: RunLog, epoch: int, processed: int) -> float:
        log.start("eval_start", epoch_num=epoch)
        quality = self.evaluate()
        log.event("eval_accuracy", quality, epoch_num=epoch, samples_count=processed)
        log.end("eval_stop", epoch_num=epoch)
        return quality


def _to_device(data: Dataset, device: str) -> Dataset:
    if device == "cpu":
        return data
    move: Callable[[torch.Tensor], torch.Tensor] = lambda t: t.to(device)  # noqa: E731
    return Dataset(
        name=data.name,
        train_x=move(data.train_x),
        train_y=move(data.train_y),
        eval_x=move(data.eval_x),
        eval_y=move(data.eval_y),
        classes=data.classes,
        source=data.source,
    )


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)
