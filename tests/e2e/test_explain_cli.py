"""``accelbench explain / history / import-mlperf`` as a user runs them: JSON numbers and one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

V100_ID = "v0.5/nvidia/dgx1_multi_ngc18.11_mxnet"
TPU_ID = "v1.0/google/tpu-v4-6912-TF"
GOLDEN = Path(__file__).parent.parent / "golden" / "mlperf"


def accelbench(*args: str, store: Path) -> subprocess.CompletedProcess[str]:
    """Run the CLI in a fresh interpreter against a store folder."""
    env = {**os.environ, "COLUMNS": "200", "ACCELBENCH_STORE": str(store)}
    return subprocess.run(
        [sys.executable, "-m", "accelbench", *args], capture_output=True, text=True, timeout=120, env=env
    )


def one_line_error(done: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("accelbench: error: ") and fragment in lines[0], lines


def test_explain_essay_pair_json(tmp_path: Path) -> None:
    done = accelbench("explain", V100_ID, TPU_ID, "--json", store=tmp_path / "store")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["ratio"]["central"] == pytest.approx(6.242 / 0.229)
    main = document["decompositions"][0]
    chips, transistors, node, residual = main["factors"]
    assert chips["remaining"]["central"] == pytest.approx(5.0477, abs=1e-4)
    assert transistors["remaining"]["high"] == pytest.approx(4.8412, abs=1e-4)
    assert transistors["remaining"]["low"] == pytest.approx(2.5977, abs=1e-4)
    assert node["value"]["central"] == pytest.approx(3.61 / 2.47)
    assert residual["value"]["central"] == pytest.approx(3.3124, abs=1e-4)
    assert main["product_of_central_values"] == pytest.approx(document["ratio"]["central"], rel=1e-12)
    assert any("scales differ" in w for w in document["warnings"])
    assert not (tmp_path / "store").exists()  # explaining MLPerf entries creates no store


def test_explain_table_output(tmp_path: Path) -> None:
    done = accelbench("explain", V100_ID, TPU_ID, store=tmp_path / "store")
    assert done.returncode == 0, done.stderr
    for text in (
        "27.3x",
        "5.40x",
        "5.05x per chip",
        "4.84x (2.60-4.84) per transistor",
        "1.46x",
        "3.31x (1.78-3.31)",
    ):
        assert text in done.stdout, done.stdout


def test_history_json_and_table(tmp_path: Path) -> None:
    done = accelbench("history", "--json", store=tmp_path / "store")
    assert done.returncode == 0, done.stderr
    rows = {row["id"]: row for row in json.loads(done.stdout)}
    assert rows[V100_ID]["figures"]["chip"]["value"]["central"] == pytest.approx(640 * 6.242 * 60)
    table = accelbench("history", "--per", "transistor", store=tmp_path / "store")
    assert table.returncode == 0 and "B-transistor-min" in table.stdout


def test_bad_chip_file_is_a_one_line_error(tmp_path: Path) -> None:
    chips = tmp_path / "chips.toml"
    chips.write_text('[[amend]]\nkey = "NVIDIA V100"\ntdp_w = { low = 300, high = 250 }\n')
    done = accelbench("explain", V100_ID, TPU_ID, "--chips", str(chips), store=tmp_path / "store")
    one_line_error(done, "field 'tdp_w': low 300 is above high 250")


def test_unknown_id_is_a_one_line_error(tmp_path: Path) -> None:
    done = accelbench("explain", V100_ID, "v1.0/google/tpu-v4-9999", store=tmp_path / "store")
    one_line_error(done, "unknown MLPerf history entry 'v1.0/google/tpu-v4-9999'")
    missing_store = accelbench("explain", V100_ID, "run1/resnet50/tiny", store=tmp_path / "store")
    one_line_error(missing_store, "unknown MLPerf history entry")


def test_bad_csv_import_is_a_one_line_error_and_leaves_the_store_alone(tmp_path: Path) -> None:
    store = tmp_path / "store"
    good = tmp_path / "good.csv"
    good.write_text(
        "round,submitter,system_name,system_dir,chip_key,accelerator_count,time_min_from_logs,source\n"
        "v4.0,Acme,Acme Box,acme_box,NVIDIA H100 SXM,8,12.5,https://example.org\n"
    )
    assert accelbench("import-mlperf", str(good), store=store).returncode == 0
    before = (store / "mlperf_history.json").read_bytes()
    bad = tmp_path / "bad.csv"
    bad.write_text("round,submitter\nv4.0\n")
    one_line_error(accelbench("import-mlperf", str(bad), store=store), "missing column 'system_name'")
    assert (store / "mlperf_history.json").read_bytes() == before
    explained = accelbench(
        "explain", "v4.0/nvidia/eos_ngc24.04_mxnet", "v4.0/acme/acme_box", "--json", store=store
    )
    assert explained.returncode == 0, explained.stderr
    assert json.loads(explained.stdout)["ratio"]["central"] == pytest.approx(13.27 / 12.5)


def test_log_folder_import_needs_chip_and_count(tmp_path: Path) -> None:
    done = accelbench("import-mlperf", str(GOLDEN / "v0.7"), store=tmp_path / "store")
    one_line_error(done, "needs --chip KEY and --accelerators N")


def test_explain_two_local_results(tmp_path: Path) -> None:
    from accelbench.cell.loadgen_body import LoadgenBody
    from accelbench.hardware.detect import Machine, machine_to_dict
    from accelbench.head import Head
    from accelbench.loadgen_figures import LoadgenVerdict
    from accelbench.results import Cell, Result
    from accelbench.store import open_store

    store = tmp_path / "store"
    machine = Machine(
        cpu_model="AMD EPYC", cpu_vendor="AuthenticAMD", cpu_family=0x1A, cpu_model_number=2, cpu_stepping=1,
        microarchitecture="Zen 5 (Turin)", model_hidden=True, logical_cores=2, physical_cores=2, sockets=1,
        isa_flags=(), caches=(), mem_bytes=24 * 2**30, os_name="Linux", kernel="6.1", python_version="3.11.9",
    )  # fmt: skip
    with open_store(store) as opened:
        opened.create_run("run1", {}, machine_to_dict(machine), machine.fingerprint)
        for stack, qps in (("torch-eager", 100.0), ("onnxruntime", 250.0)):
            verdict = LoadgenVerdict("offline", True, (), qps, 100, "quick", False, "logs")
            cell = Cell("resnet50", stack, "offline", "cpu", "tiny")
            opened.add_result(
                Result(
                    "run1",
                    cell,
                    Head("ok"),
                    LoadgenBody(loadgen=verdict),
                    machine_fingerprint=machine.fingerprint,
                    driver="loadgen",
                )
            )
    a, b = (f"run1/resnet50/tiny/canonical/{stack}/cpu/offline" for stack in ("torch-eager", "onnxruntime"))
    done = accelbench("explain", a, b, "--json", store=store)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["ratio"]["central"] == pytest.approx(2.5)
    assert document["a"]["chip_key"] == "CPU: AMD EPYC 9755" and document["a"]["count"] == pytest.approx(
        2 / 128
    )
    factors = document["decompositions"][0]["factors"]
    assert [f["value"]["central"] for f in factors] == pytest.approx([1.0, 1.0, 1.0, 2.5])
    assert any("microarchitecture" in w or "does not name the SKU" in w for w in document["warnings"])
    unknown = accelbench("explain", a, "run1/resnet50/tiny/canonical/tvm/cpu/offline", store=store)
    one_line_error(unknown, "nor is it a local result")
