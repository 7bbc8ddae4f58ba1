"""Fuzzed input files: TOML run configs, chip fact files, MLPerf CSVs, ONNX models. Each bad file is exit
code 2 with one line naming the file, no traceback, and the store untouched."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.harness import expect_user_error, tree_digest

FUZZ = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
DATA = Path(__file__).parents[2] / "accelbench" / "data"
GARBAGE = st.binary(max_size=400)
TEXT = st.text(max_size=40)


def _judge(kind: str, store: Path, name: str, content: bytes, command: Callable[[Path], list[str]]) -> None:
    """Write ``content`` to a file ``name`` and expect a one-line error naming it; store untouched."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(content)
        before = tree_digest(store)
        expect_user_error(kind, command(path), str(path))
        assert tree_digest(store) == before


# -- TOML run configs (accelbench run --config FILE) ---------------------------------------------------

RUN_KEYS = {"timeout_s": 1.0, "samples": 16, "stacks": ["null"], "threads": 1, "batch": 1, "rules": "quick"}
WRONG = st.one_of(
    st.text(max_size=10).map(lambda t: f'"{t.replace(chr(92), "").replace(chr(34), "")}"'),
    st.sampled_from(["true", "[1, 2]", "{a = 1}", "1979-05-27", "nan", "inf", "-inf", "[[1]]", "-5", "0"]),
)


def _config_command(store: Path) -> Callable[[Path], list[str]]:
    return lambda path: ["run", "--store", str(store), "--no-probe", "--config", str(path)]


@FUZZ
@given(key=st.sampled_from(sorted(RUN_KEYS)), value=WRONG)
def test_config_values_of_the_wrong_type_or_range(store: Path, key: str, value: str) -> None:
    if key == "threads" and value == "0":
        return  # threads = 0 means "all cores": valid
    content = f'[run]\nsuite = "tiny"\nworkloads = ["bert-base"]\n{key} = {value}\n'.encode()
    _judge("toml", store, "run.toml", content, _config_command(store))


@FUZZ
@given(content=GARBAGE)
def test_config_garbage(store: Path, content: bytes) -> None:
    _judge("toml", store, "run.toml", content + b"\n[[[", _config_command(store))


@FUZZ
@given(key=st.from_regex(r"[a-z_]{1,12}", fullmatch=True), value=st.integers())
def test_config_unknown_keys(store: Path, key: str, value: int) -> None:
    from accelbench.config import RunConfig

    if key in RunConfig.__dataclass_fields__:
        return
    _judge("toml", store, "run.toml", f"[run]\n{key} = {value}\n".encode(), _config_command(store))


# -- chip fact files (accelbench history --chips FILE) --------------------------------------------------

CHIP = """schema_version = 1
[[chip]]
key = "Fuzz X1"
vendor = "Fuzz"
name = "X1"
kind = "accelerator"
year = 2025
source = "https://fuzz.example/x1"
process_node_nm = 7
transistors_billion = 40
die_area_mm2 = 600
tdp_w = 300
peak_dense_fp16_bf16_tflops = 400
"""
CHIP_FIELDS = ("kind", "year", "process_node_nm", "transistors_billion", "die_area_mm2", "tdp_w")


def _chips_command(store: Path) -> Callable[[Path], list[str]]:
    return lambda path: ["history", "--store", str(store), "--chips", str(path)]


def test_the_chip_template_is_valid(store: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "chips.toml").write_text(CHIP)
        from tests.fuzz.harness import outcome

        assert outcome(_chips_command(store)(Path(tmp) / "chips.toml")).code == 0


@FUZZ
@given(
    field=st.sampled_from(CHIP_FIELDS),
    value=st.sampled_from(
        ['"many"', "-1", "0", "nan", "inf", "[1, 2]", "true", "{ low = 9, high = 1 }", '""']
    ),
)
def test_chip_values_of_the_wrong_type_or_range(store: Path, field: str, value: str) -> None:
    if field == "year" and value in ("0", "-1"):
        value = '"soon"'
    lines = [f"{field} = {value}" if line.startswith(f"{field} =") else line for line in CHIP.splitlines()]
    _judge("chips", store, "chips.toml", "\n".join(lines).encode(), _chips_command(store))


@FUZZ
@given(cut=st.integers(min_value=1, max_value=len(CHIP) - 1), tail=GARBAGE)
def test_chip_files_truncated_then_garbage(store: Path, cut: int, tail: bytes) -> None:
    content = CHIP.encode()[:cut] + b"\xff" + tail
    _judge("chips", store, "chips.toml", content, _chips_command(store))


# -- MLPerf CSVs (accelbench import-mlperf FILE) ---------------------------------------------------------

HEADER, FIRST_ROW = (DATA / "mlperf_resnet_training.csv").read_text().splitlines()[:2]
NUMERIC = ("accelerator_count", "time_min_from_logs", "accelerator_minutes", "runs_converged", "runs_total")


def _import_command(store: Path) -> Callable[[Path], list[str]]:
    return lambda path: ["import-mlperf", str(path), "--store", str(store)]


def _fresh_row(column: str, value: str) -> str:
    import csv
    import io

    row = next(csv.DictReader([HEADER, FIRST_ROW]))
    row["system_dir"], row["round"], row[column] = "fuzz_system", "v9.9", value
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=HEADER.split(","))
    writer.writeheader()
    writer.writerow(row)
    return out.getvalue()


@FUZZ
@given(
    column=st.sampled_from(NUMERIC),
    value=st.sampled_from(["many", "-3", "nan", "inf", "1e999", "0x10", "½", "0"]),
)
def test_mlperf_numbers_that_are_not(store: Path, column: str, value: str) -> None:
    if column == "accelerator_minutes" and value == "0x10":
        value = "0x"
    if column in ("runs_converged", "accelerator_count") and value == "0":
        return  # no converged run, or a count of 0 (unknown, as in the bundled history): valid rows
    _judge("mlperf-csv", store, "rows.csv", _fresh_row(column, value).encode(), _import_command(store))


@FUZZ
@given(content=GARBAGE)
def test_mlperf_garbage(store: Path, content: bytes) -> None:
    _judge("mlperf-csv", store, "rows.csv", content, _import_command(store))


@FUZZ
@given(cut=st.integers(min_value=0, max_value=len(HEADER) - 1))
def test_mlperf_truncated_header(store: Path, cut: int) -> None:
    _judge("mlperf-csv", store, "rows.csv", HEADER[:cut].encode(), _import_command(store))


# -- ONNX files (accelbench tune FILE) -------------------------------------------------------------------


def _onnx_model(dim: int = 4, opset: int = 17, cycle: bool = False, missing: bool = False) -> bytes:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, dim])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, dim])
    weight = helper.make_tensor("w", TensorProto.FLOAT, [1, 1], np.ones(1, np.float32).tolist())
    first = helper.make_node("Add", ["x", "nope" if missing else "w"], ["t"])
    second = helper.make_node("Relu", ["y" if cycle else "t"], ["y"])
    graph = helper.make_graph([first, second], "g", [x], [y], initializer=[weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return bytes(onnx._serialize(model)) if hasattr(onnx, "_serialize") else model.SerializeToString()


def _loads_and_checks(content: bytes) -> bool:
    import onnx

    try:
        onnx.checker.check_model(onnx.load_from_string(content), full_check=True)
    except Exception:  # any refusal: the bytes are not a valid model
        return False
    return True


def _tune_command(store: Path) -> Callable[[Path], list[str]]:
    return lambda path: ["tune", str(path), "--stacks", "onnxruntime", "--store", str(store)]


@FUZZ
@given(data=st.data())
def test_onnx_truncated_or_flipped(store: Path, data: st.DataObject) -> None:
    valid = _onnx_model()
    if data.draw(st.booleans()):
        content = valid[: data.draw(st.integers(min_value=0, max_value=len(valid) - 1))]
    else:
        at = data.draw(st.integers(min_value=0, max_value=len(valid) - 1))
        content = valid[:at] + bytes([valid[at] ^ data.draw(st.integers(1, 255))]) + valid[at + 1 :]
    if _loads_and_checks(content):
        return  # a cut at a field boundary can leave a valid (smaller) model: not a bad input
    _judge("onnx", store, "model.onnx", content, _tune_command(store))


@FUZZ
@given(content=GARBAGE)
def test_onnx_garbage(store: Path, content: bytes) -> None:
    _judge("onnx", store, "model.onnx", content, _tune_command(store))


@pytest.mark.parametrize("broken", [{"cycle": True}, {"missing": True}])
def test_onnx_cycles_and_missing_initializers(store: Path, broken: dict[str, bool]) -> None:
    _judge("onnx", store, "model.onnx", _onnx_model(**broken), _tune_command(store))


@pytest.mark.parametrize("broken", [{"opset": 999}, {"dim": 2**40}])
def test_onnx_wrong_opset_and_huge_dims(store: Path, broken: dict[str, int]) -> None:
    content = _onnx_model(**broken)
    _judge("onnx", store, "model.onnx", content, _tune_command(store))
