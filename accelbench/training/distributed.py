"""Run the timed runs in one process, or data parallel in ``nproc`` processes spawned by the cell.

Processes are started with the ``spawn`` method (fresh interpreters: no forked OpenMP pools) and join a
torch.distributed group over TCP on localhost: ``gloo`` on CPU, ``nccl`` on CUDA (rank r uses device
``cuda:(base + r)``). Rank 0 writes the MLPerf logs, reads the energy meter and hands the run records back
through a file.
"""

from __future__ import annotations

import pickle
import socket
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from accelbench.errors import Unsupported
from accelbench.training.data import Dataset
from accelbench.training.loop import Group, RunRecord, Trainer
from accelbench.training.meter import RunMeter
from accelbench.training.precision import TrainingPrecision
from accelbench.training.workloads import TrainingWorkload


@dataclass(frozen=True, slots=True)
class Job:
    """What every process of a group needs: workload, data, stack, device, seeds, where logs go."""

    workload: TrainingWorkload
    size: str
    data: Dataset
    stack: str
    device: str
    seeds: tuple[int, ...]
    log_dir: str
    platform: str
    threads: int
    """Intra-op threads per process."""


@dataclass(frozen=True, slots=True)
class GroupOutcome:
    """The runs of one group, the warm-up (compile) time of rank 0 and the precision it trained in."""

    runs: tuple[RunRecord, ...]
    compile_s: float
    energy_note: str
    precision: TrainingPrecision


def run_group(job: Job, nproc: int) -> GroupOutcome:
    """All runs of ``job`` on ``nproc`` processes (1: in this process)."""
    if nproc == 1:
        return _runs(job, Group())
    _check_devices(job.device, nproc)
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory(prefix="accelbench-ddp-") as folder:
        result = Path(folder) / "outcome.pickle"
        init = f"tcp://127.0.0.1:{_free_port()}"
        mp.spawn(_worker, args=(job, nproc, init, str(result)), nprocs=nproc, join=True)
        outcome: GroupOutcome = pickle.loads(result.read_bytes())
    return outcome


def _worker(rank: int, job: Job, nproc: int, init: str, result: str) -> None:
    device = _rank_device(job.device, rank)
    backend = "nccl" if device.startswith("cuda") else "gloo"
    torch.distributed.init_process_group(backend, init_method=init, world_size=nproc, rank=rank)
    try:
        outcome = _runs(replace(job, device=device), Group(rank, nproc))
        if rank == 0:
            Path(result).write_bytes(pickle.dumps(outcome))
        # no process tears down its connections while a peer still uses them: gloo aborts
        # ("terminate called without an active exception") when one rank exits mid-collective
        torch.distributed.barrier()
    finally:
        torch.distributed.destroy_process_group()


def _runs(job: Job, group: Group) -> GroupOutcome:
    torch.set_num_threads(job.threads)
    trainer = Trainer(job.workload, job.size, job.data, job.stack, job.device, group)
    meter = RunMeter(job.device, group.world) if group.rank == 0 else None
    try:
        runs = tuple(
            trainer.run(seed, Path(job.log_dir) / f"result_{index}.txt", job.platform, meter)
            for index, seed in enumerate(job.seeds)
        )
    finally:
        if meter is not None:
            meter.close()
    note = meter.note if meter is not None else ""
    return GroupOutcome(runs, trainer.compile_s, note, trainer.precision)


def _rank_device(device: str, rank: int) -> str:
    if not device.startswith("cuda"):
        return device
    base = int(device.partition(":")[2] or 0)
    return f"cuda:{base + rank}"


def _check_devices(device: str, nproc: int) -> None:
    if device.startswith("cuda"):
        base = int(device.partition(":")[2] or 0)
        if base + nproc > torch.cuda.device_count():
            raise Unsupported(f"--nproc {nproc} from {device} needs {base + nproc} GPUs")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
