"""``make gpu-check``: one line and exit 0 without CUDA, offline installs of carried wheels, the cell lines.

Every test holds on a CUDA machine too: the no-CUDA path is reached by hiding the devices
(``CUDA_VISIBLE_DEVICES=""``) or torch itself, never by assuming the machine has none.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "gpu_check.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


gpu_check = _script()


def _make(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    command = ["make", "-s", "-C", str(REPO), "gpu-check", f"GPU_PYTHON={sys.executable}", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


def test_without_cuda_make_gpu_check_says_so_in_one_line_and_exits_0(tmp_path: Path) -> None:
    done = _make(f"OUT={tmp_path / 'out'}")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu-check: no CUDA") and "nothing measured" in lines[0]
    assert (tmp_path / "out" / "gpu-check.txt").read_text() == lines[0] + "\n"
    assert _make().returncode == 2  # OUT is required


def test_without_torch_it_says_so_in_one_line_and_exits_0(tmp_path: Path) -> None:
    code = (
        "import runpy, sys; sys.modules['torch'] = None; "
        f"sys.argv = ['gpu_check.py', 'run', {str(tmp_path)!r}]; "
        f"runpy.run_path({str(SCRIPT)!r}, run_name='__main__')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    assert (
        line.startswith("gpu-check: no CUDA here: torch does not import (")
        and "import of torch halted" in line
    )


def _wheel(folder: Path, name: str) -> Path:
    """A minimal pure wheel of module ``name`` (version 1.0)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-1.0-py3-none-any.whl"
    info = f"{name}-1.0.dist-info"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(f"{name}/__init__.py", "CARRIED = True\n")
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        wheel.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        wheel.writestr(
            f"{info}/RECORD", f"{name}/__init__.py,,\n{info}/METADATA,,\n{info}/WHEEL,,\n{info}/RECORD,,\n"
        )
    return path


def _summary(out: Path) -> list[str]:
    return (out / gpu_check.SUMMARY).read_text().splitlines()


def test_carried_wheels_install_offline_and_what_stays_missing_is_one_line_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    carried = gpu_check.Need("accelbench_carried_probe", "accelbench_carried_probe", "report", carried=True)
    absent = gpu_check.Need("accelbench_absent_probe", "accelbench-absent-probe", "bert-base")
    monkeypatch.setattr(gpu_check, "NEEDS", (carried, absent))
    monkeypatch.setattr(gpu_check, "site_dir", lambda: tmp_path / "site")
    monkeypatch.setattr(sys, "path", list(sys.path))
    _wheel(tmp_path / "wheels", "accelbench_carried_probe")
    out = tmp_path / "out"
    out.mkdir()
    lost, site = gpu_check.prepare(out, tmp_path / "wheels")
    assert lost == {"bert-base"} and site == str(tmp_path / "site")
    assert (tmp_path / "site" / "accelbench_carried_probe" / "__init__.py").is_file()
    assert _summary(out) == [
        f"gpu-check: installed accelbench_carried_probe from {tmp_path / 'wheels'} into {tmp_path / 'site'}",
        "gpu-check: missing accelbench-absent-probe (accelbench_absent_probe): bert-base is left out",
    ]
    command = gpu_check.install_command(tmp_path / "w", tmp_path / "s", ["x"])
    assert {"--no-index", "--no-deps", "--target", "--find-links"} <= set(command)


def test_without_the_wheel_folder_a_missing_run_module_stops_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    need = gpu_check.Need("accelbench_loadgen_probe", "mlcommons-loadgen", "run", carried=True, binary=True)
    monkeypatch.setattr(gpu_check, "NEEDS", (need,))
    monkeypatch.setattr(gpu_check, "site_dir", lambda: tmp_path / "site")
    monkeypatch.setattr(gpu_check, "cuda_state", lambda: (True, "gpu-check: a GPU"))
    args = gpu_check.parse(["run", str(tmp_path / "out"), "--wheels", str(tmp_path / "none")])
    assert gpu_check.check(tmp_path / "out", args) == 1
    assert _summary(tmp_path / "out") == [
        "gpu-check: a GPU",
        f"gpu-check: no wheel folder {tmp_path / 'none'} (make gpu-wheels where a registry is reachable)",
        "gpu-check: missing mlcommons-loadgen (accelbench_loadgen_probe): nothing can run "
        "(make gpu-wheels carries it)",
    ]


def test_wheel_downloads_are_pinned_per_cpython_for_compiled_wheels() -> None:
    loadgen, plotly = (n for n in gpu_check.NEEDS if n.distribution in ("mlcommons-loadgen", "plotly"))
    compiled = gpu_check.download_command(Path("w"), loadgen, "6.0.17", "3.12")
    assert compiled[-1] == "mlcommons-loadgen==6.0.17" and "--no-deps" in compiled
    assert compiled[compiled.index("--python-version") + 1] == "3.12"
    assert "--platform=manylinux_2_28_x86_64" in compiled
    assert "--python-version" not in gpu_check.download_command(Path("w"), plotly, "7.1.0", None)
    assert {n.distribution for n in gpu_check.NEEDS if n.carried} == {
        "mlcommons-loadgen",
        "plotly",
        "narwhals",
    }


def _result(stack: str, **fields: Any) -> dict[str, Any]:
    cell = {"workload": "resnet50", "stack": stack, "scenario": "offline"}
    return {"cell": cell, "status": "ok", "reason": "", **fields}


def test_cell_lines_carry_precision_and_the_energy_label_as_stored() -> None:
    energy = {"energy_per_query_j": 0.0123, "power_w": 412.5, "meter": "nvml"}
    counter = _result(
        "torch-eager",
        effective_precision="fp32",
        settings={"stack": {"tf32": "off"}},
        loadgen={"qps": 2345.6, "valid": True},
        energy={**energy, "provenance": "measured"},
    )
    assert gpu_check.cell_line(counter) == (
        "resnet50/torch-eager/offline: ok: precision fp32 (tf32 off); 2346 /s (VALID); "
        "energy 0.0123 J/sample, 412.5 W, measured by nvml"
    )
    polled = _result(
        "torch-tf32",
        effective_precision="tf32",
        loadgen={"qps": 1.0},
        energy={**energy, "provenance": "polled"},
    )
    assert "precision tf32;" in gpu_check.cell_line(polled) and "polled by nvml" in gpu_check.cell_line(
        polled
    )
    assert gpu_check.cell_line(_result("x", latency={"p50_s": 0.0015})).endswith(
        "p50 1.5 ms; energy unavailable"
    )
    drifted = _result("x", status="unstable", reason="probe drifted", latency={"p50_s": 1.0})
    assert gpu_check.cell_line(drifted) == (
        "resnet50/x/offline: unstable: precision ?; p50 1e+03 ms; energy unavailable (probe drifted)"
    )
    missing = _result("onnxruntime", status="unavailable", reason="no CUDA execution provider")
    assert (
        gpu_check.cell_line(missing)
        == "resnet50/onnxruntime/offline: unavailable: no CUDA execution provider"
    )


def test_the_cuda_path_runs_the_cli_and_writes_results_and_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CUDA path with ``cuda_state`` faked and the devices hidden: cells stored unavailable, say why."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setattr(gpu_check, "cuda_state", lambda: (True, "gpu-check: a GPU (faked)"))
    out = tmp_path / "out"
    args = gpu_check.parse(["run", str(out), "--stacks", "torch-eager", "--scenarios", "single-stream"])
    assert isinstance(args, argparse.Namespace)
    assert gpu_check.check(out, args) == 0, (out / "run.log").read_text()[-3000:]
    lines = _summary(out)
    assert lines[0] == "gpu-check: a GPU (faked)" and lines[-1] == f"gpu-check: report {out / 'report.html'}"
    cells = [line for line in lines if line.startswith(("resnet50/", "bert-base/"))]
    assert len(cells) == 2 and all("/torch-eager/single-stream: unavailable: " in c for c in cells)
    assert (out / "results.json").is_file() and (out / "store" / "results.sqlite").is_file()
    assert (out / "report.html").stat().st_size > 0
