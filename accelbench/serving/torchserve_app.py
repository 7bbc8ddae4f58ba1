"""The TorchServe server script: a model archive of ONNX Runtime behind TorchServe (Java frontend, Python
worker), answering v2 binary messages on ``POST /predictions/<model>``.

Run as ``python -m accelbench.serving.torchserve_app CONFIG.json`` by ``accelbench.serving.torchserve``
(in a session of its own). It packs ``torchserve_handler`` and the ONNX files into a ``.mar`` with
``torch-model-archiver``, writes TorchServe's ``config.properties`` (every listener on 127.0.0.1,
token authorization off, Prometheus metrics, one worker, ``batchSize`` requests per call after up to
``maxBatchDelay`` ms), then runs ``torchserve --start --foreground`` as its child, working in
``temp_dir`` (TorchServe writes ``logs/`` to its working directory). TorchServe keeps its pid file
and the worker sockets in the temp folder, which is ``temp_dir/tmp`` here (``TMPDIR``, ``TEMP``), so
two servers never meet; its ``--stop`` is not used: this script stops its own by session. SIGTERM, or
the owner going away, kills the rest of the session (the Java frontend and its Python workers) and
exits.

CONFIG keys: ``models``, ``model``, ``threads``, ``max_batch`` (requests per handler call),
``batch_wait_s``, ``http_port``, ``management_port``, ``metrics_port``, ``temp_dir``, ``owner_pid``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from accelbench.serving import torchserve_handler
from accelbench.serving.sessions import kill_session, watch_owner

HOST = "127.0.0.1"


def archive(config: dict[str, Any], folder: Path) -> Path:
    """Pack the handler, the ONNX files and ``server.json`` into ``folder/store/<model>.mar``."""
    staging = folder / "staging"
    staging.mkdir(parents=True, exist_ok=True)
    names = {}
    for rows, path in config["models"].items():
        names[rows] = f"model-{rows}.onnx"
        shutil.copyfile(path, staging / names[rows])
    (staging / "server.json").write_text(json.dumps({"models": names, "threads": config["threads"]}))
    store = folder / "store"
    store.mkdir(exist_ok=True)
    extra = ",".join(str(staging / name) for name in [*names.values(), "server.json"])
    archiver = [
        sys.executable,
        "-c",
        "from model_archiver.model_packaging import generate_model_archive as g; g()",
    ]
    subprocess.run(
        [
            *archiver,
            "--model-name",
            config["model"],
            "--version",
            "1.0",
            "--handler",
            str(torchserve_handler.__file__),
            "--extra-files",
            extra,
            "--export-path",
            str(store),
            "--force",
        ],
        check=True,
    )
    return store


def properties(config: dict[str, Any]) -> str:
    """TorchServe's ``config.properties`` for ``config``."""
    model = config["model"]
    models = {
        model: {
            "1.0": {
                "marName": f"{model}.mar",
                "minWorkers": 1,
                "maxWorkers": 1,
                "batchSize": int(config["max_batch"]),
                "maxBatchDelay": max(1, round(float(config["batch_wait_s"]) * 1e3)),
                "responseTimeout": 60,
            }
        }
    }
    lines = [
        f"inference_address=http://{HOST}:{config['http_port']}",
        f"management_address=http://{HOST}:{config['management_port']}",
        f"metrics_address=http://{HOST}:{config['metrics_port']}",
        "disable_token_authorization=true",
        "metrics_mode=prometheus",
        "disable_system_metrics=true",  # else a Python collector starts every minute beside the cell
        "install_py_dep_per_model=false",
        "job_queue_size=1000",
        "default_workers_per_model=1",
        f"models={json.dumps(models)}",
    ]
    return "\n".join(lines) + "\n"


LOG4J = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration>
  <Appenders>
    <Console name="STDOUT" target="SYSTEM_OUT"><PatternLayout pattern="%d %p %c - %m%n"/></Console>
  </Appenders>
  <Loggers><Root level="warn"><AppenderRef ref="STDOUT"/></Root></Loggers>
</Configuration>
"""
"""TorchServe's logging: warnings and errors to the server's log; its default logs every request."""


def serve_forever(config: dict[str, Any]) -> int:
    """Start TorchServe in the foreground and wait for it, SIGTERM or the owner's end."""
    folder = Path(config["temp_dir"])
    watch_owner(int(config["owner_pid"]), lambda: None, remove=[str(folder)])
    store = archive(config, folder)
    (folder / "config.properties").write_text(properties(config))
    (folder / "log4j2.xml").write_text(LOG4J)
    command = [
        str(Path(sys.executable).with_name("torchserve")),
        "--start",
        "--foreground",
        "--ncs",
        "--model-store",
        str(store),
        "--ts-config",
        str(folder / "config.properties"),
        "--models",
        f"{config['model']}={config['model']}.mar",
        "--disable-token-auth",
        "--log-config",
        str(folder / "log4j2.xml"),
    ]

    def on_term(signum: int, frame: object) -> None:
        kill_session(os.getsid(0), keep=os.getpid())
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_term)
    temp = folder / "tmp"  # TorchServe's pid file and the Java frontend's worker sockets: per server
    temp.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(temp), "TEMP": str(temp), "LOG_LOCATION": str(folder / "logs")}
    return subprocess.run(command, cwd=folder, env=env, check=False).returncode


def main(argv: list[str]) -> int:
    """Entry point: serve the model described by the JSON file ``argv[0]``."""
    logging.basicConfig(level=logging.WARNING)
    return serve_forever(json.loads(Path(argv[0]).read_text()))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
