"""The optimum-intel exporter (Hugging Face folder -> OpenVINO IR), which needs a venv of its own.

optimum-intel 2.2.0 (the newest) requires ``transformers<5.6``, ``huggingface-hub<1.22`` and
``optimum~=2.3.0``, while accelbench runs transformers 5.24; so the export runs ``optimum-cli`` from a
separate venv, pinned by ``optimum_constraints.txt`` beside this file. Its Python is, in this order:
``$ACCELBENCH_OPTIMUM_PYTHON``, ``~/.cache/accelbench/optimum-venv/bin/python``. ``create_venv`` makes
one (``python -m accelbench.generation.exporter [FOLDER]``: ~1.6 GB, about 2 minutes with cached
wheels); it removes torchvision afterwards (the registry's build does not match the local torch, and
transformers then fails to import ``PreTrainedModel``).

The export runs once per model and weight format, offline (``HF_HUB_OFFLINE=1``), into
``<cache_dir>/llm/<model>-openvino-<format>/``; a finished folder holds a completion mark.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from accelbench.errors import Unsupported
from accelbench.generation.models import LlmModel

ENV_VAR = "ACCELBENCH_OPTIMUM_PYTHON"
DEFAULT_VENV = Path.home() / ".cache" / "accelbench" / "optimum-venv"
CONSTRAINTS = Path(__file__).with_name("optimum_constraints.txt")
_EXPORT_TIMEOUT_S = 1800
_DONE_MARK = "accelbench-complete"


def exporter_python() -> Path:
    """The Python of the exporter venv (it may not exist)."""
    configured = os.environ.get(ENV_VAR)
    return Path(configured) if configured else DEFAULT_VENV / "bin" / "python"


def missing_reason() -> str | None:
    """None when the exporter venv has optimum-cli, else why not."""
    python = exporter_python()
    if not python.exists():
        return f"no optimum-intel exporter venv at {python.parent.parent} (python -m {__name__} creates it)"
    if not (python.parent / "optimum-cli").exists():
        return f"the exporter venv {python.parent.parent} has no optimum-cli"
    return None


def exported_folder(model: LlmModel, weight_format: str, cache_dir: Path) -> tuple[Path, float]:
    """The OpenVINO IR folder of ``model`` at ``weight_format``, exported if needed; (folder, export_s)."""
    out = cache_dir / "llm" / f"{model.name}-openvino-{weight_format}"
    if (out / _DONE_MARK).exists():
        return out, 0.0
    reason = missing_reason()
    if reason:
        raise Unsupported(reason)
    cli = exporter_python().parent / "optimum-cli"
    command = [str(cli), "export", "openvino", "-m", str(model.folder)]
    command += ["--task", "text-generation-with-past", "--weight-format", weight_format, str(out)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=_EXPORT_TIMEOUT_S)
    if done.returncode != 0 or not (out / "openvino_model.xml").exists():
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise Unsupported(f"optimum-intel export failed ({weight_format}): {tail[0]}")
    (out / _DONE_MARK).write_text("ok\n")
    return out, time.perf_counter() - start


def create_venv(folder: Path = DEFAULT_VENV) -> Path:
    """Create the exporter venv in ``folder`` with the pinned optimum-intel; returns its Python."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    pip = [str(folder / "bin" / "python"), "-m", "pip"]
    subprocess.run([*pip, "install", "-c", str(CONSTRAINTS), "optimum-intel", "torch"], check=True)
    subprocess.run([*pip, "uninstall", "-y", "torchvision"], check=True)
    return folder / "bin" / "python"


if __name__ == "__main__":
    print(create_venv(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_VENV))
