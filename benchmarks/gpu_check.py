"""The GPU check: accelbench's own CLI under standard rules on a CUDA machine, with the Python it has there.

Usage::

    python3 benchmarks/gpu_check.py run OUT [--wheels DIR] [--workloads ...] [--stacks ...] [--scenarios ...]
    python benchmarks/gpu_check.py wheels DIR [--pythons 3.11,3.12,3.13]

``run`` (``make gpu-check OUT=DIR``) needs no registry and installs nothing system-wide:

1. No CUDA (torch does not import, or ``torch.cuda.is_available()`` is False): one line, exit 0.
2. Every module the run needs (``NEEDS``) is looked up; one that is missing and has a wheel in the wheel
   folder (``make gpu-wheels``, carried with the working tree) is installed with ``pip install --no-index
   --no-deps --find-links`` into a private folder under the temp dir, put on ``PYTHONPATH``. Whatever is
   still missing is named in one line with what it costs: nothing runs, no bert-base, no HTML report, or
   no energy counter.
3. ``accelbench run --workloads resnet50,bert-base --stacks torch-eager,torch-inductor,onnxruntime
   --devices cuda:0 --rules standard --store OUT/store --json`` (the repository on ``PYTHONPATH``), then
   ``accelbench report --store OUT/store -o OUT/report.html``. A stack that cannot run there (onnxruntime
   without its CUDA provider) is stored ``unavailable`` with its reason, by accelbench itself.
4. One line per cell in ``OUT/gpu-check.txt`` (and on stdout): status, the precision the stack declared
   (``tf32`` only when a stack declares it; torch stacks keep fp32 strict), latency or throughput, and
   energy with its label as stored: ``measured`` from NVML's total-energy counter, ``polled`` when the GPU
   has none and power was sampled (``accelbench.meters.nvml``). ``OUT`` also gets ``results.json`` (the
   run's JSON document), ``run.log`` (the CLI's stderr) and the store's ``results.sqlite``.

``wheels`` (``make gpu-wheels``, where pip reaches a registry) downloads the wheels of ``NEEDS`` marked
carried, at the versions installed beside this script's Python, for several CPython versions, and fails when
they exceed ``WHEELS_CAP_BYTES`` (the device tool carries 64 MiB in all).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
WHEELS = REPO / "gpu-wheels"
WORKLOADS = ("resnet50", "bert-base")
STACKS = ("torch-eager", "torch-inductor", "onnxruntime")
SCENARIOS = ("single-stream", "offline")
DEVICE = "cuda:0"
RULES = "standard"
SUMMARY = "gpu-check.txt"
PYTHONS = ("3.11", "3.12", "3.13")
PLATFORMS = (*(f"manylinux_2_{glibc}_x86_64" for glibc in (28, 27, 17)), "manylinux2014_x86_64")
WHEELS_CAP_BYTES = 48 * 2**20
"""The wheel folder's cap: the device tool carries 64 MiB of working tree in all."""


@dataclass(frozen=True)
class Need:
    """A module the check imports, its distribution, what is lost without it, and whether wheels carry it."""

    module: str
    distribution: str
    purpose: str
    """``run`` (nothing runs without it), ``bert-base``, ``report`` or ``energy``."""
    carried: bool = False
    binary: bool = False
    """A compiled wheel: one per CPython version."""


NEEDS = (
    Need("numpy", "numpy", "run"),
    Need("scipy", "scipy", "run"),
    Need("typer", "typer", "run"),
    Need("rich", "rich", "run"),
    Need("psutil", "psutil", "run"),
    Need("mlperf_loadgen", "mlcommons-loadgen", "run", carried=True, binary=True),
    Need("transformers", "transformers", "bert-base"),
    Need("plotly", "plotly", "report", carried=True),
    Need("narwhals", "narwhals", "report", carried=True),
    Need("pynvml", "nvidia-ml-py", "energy"),
)
LOSS = {
    "run": "nothing can run",
    "bert-base": "bert-base is left out",
    "report": "no HTML report",
    "energy": "no GPU energy counter (energy unavailable)",
}


def say(out: Path, line: str) -> None:
    """Print ``line`` and append it to the summary file in ``out``."""
    print(line, flush=True)
    with (out / SUMMARY).open("a", encoding="utf-8") as summary:
        summary.write(line + "\n")


def first_line(err: BaseException) -> str:
    """The first line of an exception's message, with its type."""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"


def last_line(text: str) -> str:
    """The last non-empty line of a command's output."""
    return (text.strip().splitlines() or ["no output"])[-1]


def cuda_state() -> tuple[bool, str]:
    """(CUDA usable, the line that says so): the GPU and torch's versions, or why there is no CUDA."""
    try:
        import torch
    except Exception as err:  # torch absent or broken: no CUDA either way
        return False, f"gpu-check: no CUDA here: torch does not import ({first_line(err)}); nothing measured"
    if not torch.cuda.is_available():
        why = f"torch {torch.__version__}, torch.cuda.is_available() is False"
        return False, f"gpu-check: no CUDA device ({why}); nothing measured"
    tf32 = f"matmul {torch.backends.cuda.matmul.allow_tf32}, cuDNN {torch.backends.cudnn.allow_tf32}"
    return True, (
        f"gpu-check: {torch.cuda.get_device_name(0)}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
        f"Python {platform.python_version()}; torch's TF32 defaults {tf32} (each stack sets its own)"
    )


def site_dir() -> Path:
    """The private install folder of carried wheels, one per interpreter (``cpython-312``...)."""
    return Path(tempfile.gettempdir()) / f"accelbench-gpu-site-{sys.implementation.cache_tag}"


def missing(needs: Sequence[Need], find: Callable[[str], Any] = importlib.util.find_spec) -> list[Need]:
    """The needs whose module ``find`` does not find."""
    return [need for need in needs if find(need.module) is None]


def install_command(wheels: Path, site: Path, distributions: Sequence[str]) -> list[str]:
    """pip, offline: only the named distributions, from ``wheels``, into ``site``."""
    return [
        sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-index",
        "--no-deps", "--no-compile", "--upgrade", "--find-links", str(wheels), "--target", str(site),
        *distributions,
    ]  # fmt: skip


def install_carried(wanted: Sequence[Need], wheels: Path, site: Path) -> str:
    """Install the carried wheels of ``wanted`` into ``site``; a line saying what happened."""
    names = [need.distribution for need in wanted]
    if not wheels.is_dir():
        return f"gpu-check: no wheel folder {wheels} (make gpu-wheels where a registry is reachable)"
    if importlib.util.find_spec("pip") is None:
        return f"gpu-check: pip is missing, so the wheels in {wheels} cannot be installed"
    done = subprocess.run(install_command(wheels, site, names), capture_output=True, text=True)
    if done.returncode != 0:
        tail = last_line(done.stderr)
        return f"gpu-check: installing {', '.join(names)} from {wheels} failed: {tail}"
    return f"gpu-check: installed {', '.join(names)} from {wheels} into {site}"


def prepare(out: Path, wheels: Path) -> tuple[set[str], str]:
    """Look up ``NEEDS``, install the carried ones that are missing; (purposes lost, PYTHONPATH head)."""
    site = site_dir()
    if site.is_dir():
        sys.path.insert(0, str(site))
    carried = [need for need in missing(NEEDS) if need.carried]
    if carried:
        say(out, install_carried(carried, wheels, site))
        if str(site) not in sys.path:
            sys.path.insert(0, str(site))
        importlib.invalidate_caches()
    lost = missing(NEEDS)
    for need in lost:
        hint = " (make gpu-wheels carries it)" if need.carried else ""
        say(out, f"gpu-check: missing {need.distribution} ({need.module}): {LOSS[need.purpose]}{hint}")
    return {need.purpose for need in lost}, str(site) if site.is_dir() else ""


def environment(site: str) -> dict[str, str]:
    """This environment with the private site and the repository first on ``PYTHONPATH``."""
    paths = [site, str(REPO), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p), "COLUMNS": "200"}


def run_command(out: Path, args: argparse.Namespace, workloads: Sequence[str]) -> list[str]:
    """``accelbench run`` of the check: the cells on ``DEVICE`` under ``RULES``, JSON on stdout."""
    command = [sys.executable, "-m", "accelbench", "run", "--workloads", ",".join(workloads)]
    command += ["--stacks", args.stacks, "--scenarios", args.scenarios, "--devices", DEVICE]
    command += ["--rules", args.rules, "--store", str(out / "store"), "--no-probe", "--json"]
    return command + (["--timeout-s", str(args.timeout_s)] if args.timeout_s else [])


def run_cells(out: Path, command: list[str], env: dict[str, str]) -> dict[str, Any] | None:
    """Run ``command``; its JSON to ``results.json``, stderr to ``run.log``; None (and a line) on failure."""
    log = out / "run.log"  # written as the run goes (a line per cell), so a lease cut short keeps it
    with log.open("w", encoding="utf-8") as stderr:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env, cwd=REPO)
    if done.returncode != 0:
        tail = last_line(log.read_text(encoding="utf-8"))
        say(out, f"gpu-check: accelbench run exited {done.returncode}: {tail} (run.log has the rest)")
        return None
    (out / "results.json").write_text(done.stdout, encoding="utf-8")
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def write_report(out: Path, env: dict[str, str]) -> str:
    """``accelbench report`` of the store into ``OUT/report.html``; the line that says how it went."""
    command = [sys.executable, "-m", "accelbench", "report", "--store", str(out / "store")]
    done = subprocess.run([*command, "-o", str(out / "report.html")], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        return f"gpu-check: accelbench report exited {done.returncode}: {done.stderr.strip()[-300:]}"
    return f"gpu-check: report {out / 'report.html'}"


def cell_line(result: dict[str, Any]) -> str:
    """One cell: key, status, declared precision, latency or throughput, labelled energy, then the reason."""
    cell = result["cell"]
    head = f"{cell['workload']}/{cell['stack']}/{cell['scenario']}: {result['status']}"
    reason = result.get("reason") or ""
    if not (result.get("latency") or result.get("loadgen")):  # nothing measured: why not
        return f"{head}: {reason}" if reason else head
    tf32 = ((result.get("settings") or {}).get("stack") or {}).get("tf32")
    parts = [f"precision {result.get('effective_precision') or '?'}" + (f" (tf32 {tf32})" if tf32 else "")]
    latency, loadgen = result.get("latency") or {}, result.get("loadgen") or {}
    if latency.get("p50_s") is not None:
        parts.append(f"p50 {latency['p50_s'] * 1e3:.3g} ms")
    if loadgen.get("qps") is not None:
        parts.append(f"{loadgen['qps']:.4g} /s ({'VALID' if loadgen.get('valid') else 'INVALID'})")
    parts.append(energy_text(result.get("energy")))
    return f"{head}: {'; '.join(parts)}" + (f" ({reason})" if reason else "")


def energy_text(energy: dict[str, Any] | None) -> str:
    """Energy per sample with its stored label (``measured``, ``polled``, ``estimated``), or unavailable."""
    if not energy:
        return "energy unavailable"
    per_sample = f"{energy['energy_per_query_j']:.3g} J/sample"
    return f"energy {per_sample}, {energy['power_w']:.4g} W, {energy['provenance']} by {energy['meter']}"


def check(out: Path, args: argparse.Namespace) -> int:
    """The whole ``run`` step (see the module docstring); the exit status."""
    out.mkdir(parents=True, exist_ok=True)
    (out / SUMMARY).write_text("", encoding="utf-8")
    usable, line = cuda_state()
    say(out, line)
    if not usable:
        return 0
    lost, site = prepare(out, Path(args.wheels))
    if "run" in lost:
        return 1
    workloads = [w for w in args.workloads.split(",") if not (w == "bert-base" and "bert-base" in lost)]
    env = environment(site)
    document = run_cells(out, run_command(out, args, workloads), env)
    if document is None:
        return 1
    for result in document.get("results", []):
        say(out, cell_line(result))
    if "report" not in lost:
        say(out, write_report(out, env))
    return 0


def download_command(dest: Path, need: Need, version: str, python: str | None) -> list[str]:
    """``pip download`` of one wheel (for CPython ``python`` when the wheel is compiled)."""
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
    if python is not None:
        command += ["--python-version", python, "--implementation", "cp"]
        command += [f"--platform={name}" for name in PLATFORMS]
    return [*command, "-d", str(dest), f"{need.distribution}=={version}"]


def download_one(dest: Path, need: Need, version: str, python: str | None) -> bool:
    """One ``pip download``; False (and a line) when it fails."""
    done = subprocess.run(download_command(dest, need, version, python), capture_output=True, text=True)
    if done.returncode != 0:
        where = f"CPython {python}" if python else "any Python"
        print(f"gpu-wheels: {need.distribution}=={version} for {where}: {last_line(done.stderr)}")
    return done.returncode == 0


def download(dest: Path, pythons: Sequence[str]) -> int:
    """The carried wheels into ``dest``, pinned to the versions installed here; 1 on failure or over cap."""
    dest.mkdir(parents=True, exist_ok=True)
    failed = 0
    for need in (n for n in NEEDS if n.carried):
        version = importlib.metadata.version(need.distribution)
        for python in pythons if need.binary else [None]:
            failed += not download_one(dest, need, version, python)
    size = sum(path.stat().st_size for path in dest.glob("*.whl"))
    print(f"gpu-wheels: {len(list(dest.glob('*.whl')))} wheels, {size / 2**20:.1f} MiB in {dest}")
    if size > WHEELS_CAP_BYTES:
        print(f"gpu-wheels: over the {WHEELS_CAP_BYTES / 2**20:.0f} MiB cap; remove some from {dest}")
        return 1
    return 1 if failed else 0


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    steps = parser.add_subparsers(dest="step", required=True)
    run = steps.add_parser("run", help="measure on CUDA (one line and exit 0 without it)")
    run.add_argument("out", type=Path)
    run.add_argument("--wheels", default=str(WHEELS))
    run.add_argument("--workloads", default=",".join(WORKLOADS))
    run.add_argument("--stacks", default=",".join(STACKS))
    run.add_argument("--scenarios", default=",".join(SCENARIOS))
    run.add_argument("--rules", default=RULES, help="standard (3 trials) or quick (1 trial, shorter)")
    run.add_argument("--timeout-s", type=float, default=None, help="wall-clock limit per cell")
    wheels = steps.add_parser("wheels", help="download the carried wheels (needs a registry)")
    wheels.add_argument("dest", type=Path)
    wheels.add_argument("--pythons", default=",".join(PYTHONS))
    return parser.parse_args(argv)


def main(argv: Sequence[str]) -> int:
    """Run the chosen step."""
    args = parse(argv)
    if args.step == "wheels":
        return download(args.dest.resolve(), args.pythons.split(","))
    return check(args.out.resolve(), args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
