"""``accelbench tune``: an ONNX file the project has never seen, a torch ``module:function``, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tests.e2e.test_cli import accelbench


class _Gated(torch.nn.Module):
    """A small model of the user's own: odd widths, a gate, a cumulative sum."""

    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Linear(29, 47)
        self.down = torch.nn.Linear(47, 13)

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        hidden = self.up(x)
        return self.down(torch.sigmoid(hidden) * hidden).cumsum(dim=1) * scale


def tiny_model() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """The ``module:function`` the torch case tunes: (module, example inputs)."""
    return _Gated(), (torch.randn(1, 5, 29), torch.full((1, 1, 13), 0.5))


def odd_onnx(path: Path) -> Path:
    """An ONNX graph of unusual ops and shapes: Einsum on 3x37x53, CumSum, Erf, Mul."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = np.random.default_rng(5).standard_normal((53, 11)).astype(np.float32) / 7
    nodes = [
        helper.make_node("Einsum", ["x", "w"], ["e"], equation="bij,jk->bik"),
        helper.make_node("CumSum", ["e", "axis"], ["c"]),
        helper.make_node("Erf", ["c"], ["r"]),
        helper.make_node("Mul", ["r", "e"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "odd",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 37, 53])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 37, 11])],
        [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(np.array(1, np.int64), "axis")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    onnx.save(model, path)
    return path


def tune_json(*args: str) -> dict[str, Any]:
    """The ``--json`` document; the exit code is 0 with a verified stack, 1 without (a busy machine can
    leave every honest cell ``unstable``: ``assert_verified_ranking`` then asserts nothing is named)."""
    done = accelbench("tune", *args, "--rules", "quick", "--json")
    assert done.stdout.startswith("{"), done.stderr[-3000:]
    document: dict[str, Any] = json.loads(done.stdout)
    verified = any(row["verified"] for row in document["ranking"])
    assert done.returncode == (0 if verified else 1), done.stderr[-3000:]
    if not verified:
        assert "no stack produced a verified result" in done.stderr
    return document


@pytest.mark.slow
def test_tune_ranks_an_unseen_onnx_file(tmp_path: Path) -> None:
    model = odd_onnx(tmp_path / "odd.onnx")
    stacks = "onnxruntime,openvino,torch-eager"
    document = tune_json(str(model), "--stacks", stacks, "--store", str(tmp_path / "store"))
    rows = {row["stack"]: row for row in document["ranking"]}
    assert set(rows) == set(stacks.split(","))
    assert document["reference_stack"] == "onnxruntime"
    assert_verified_ranking(document, ("onnxruntime", "openvino"))
    assert rows["torch-eager"]["status"] == "unsupported" and "onnx2torch" in rows["torch-eager"]["reason"]
    for name in ("onnxruntime", "openvino"):  # right answers, verified unless the machine disturbed them
        assert rows[name]["quality"]["passed"] and rows[name]["quality"]["value"] > 0.9999, rows[name]
    if rows["onnxruntime"]["verified"]:
        assert rows["onnxruntime"]["speed_vs_reference"] == 1.0
    flags = [row["verified"] for row in document["ranking"]]
    assert flags == sorted(flags, reverse=True) and flags[-1] is False  # verified ones first


def assert_verified_ranking(document: dict[str, Any], candidates: tuple[str, ...]) -> None:
    """The best stack is the fastest verified one; an honest row is unverified only when the machine
    drifted (``unstable``); the speed-up needs a verified reference."""
    rows = {row["stack"]: row for row in document["ranking"]}
    honest = [rows[name] for name in candidates]
    assert all(row["verified"] or row["status"] == "unstable" for row in honest), honest
    verified = [row for row in document["ranking"] if row["verified"]]
    if not verified:  # every honest cell disturbed (a busy machine): nothing to name best
        assert document["best_stack"] is None and document["speedup_vs_reference"] is None
        return
    assert document["best_stack"] == max(verified, key=lambda row: row["qps"])["stack"]
    assert document["best_stack"] in candidates
    if rows[document["reference_stack"]]["verified"]:
        assert document["speedup_vs_reference"] >= 1.0
    else:
        assert document["speedup_vs_reference"] is None


@pytest.mark.slow
@pytest.mark.exhaustive  # 36-67 s; make test tunes an unseen ONNX file (11-15 s), make test-all both
def test_tune_ranks_a_torch_function(tmp_path: Path) -> None:
    target = f"{__name__}:tiny_model"
    document = tune_json(target, "--stacks", "torch-eager,onnxruntime", "--store", str(tmp_path / "s"))
    assert document["reference_stack"] == "torch-eager"
    assert_verified_ranking(document, ("torch-eager", "onnxruntime"))
    assert document["model"] == {
        "kind": "torch",
        "location": target,
        "name": "tune-tiny_model",
        "import_root": str(Path.cwd()),
    }
    shown = accelbench("show", document["run_id"], "--store", str(tmp_path / "s"), "--json")
    assert len(json.loads(shown.stdout)["results"]) == 2


def test_malformed_onnx_and_bad_function_are_one_line_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"\x08\x07not a protobuf at all")
    store = tmp_path / "store"
    # a module without the function: json (light; this module's own imports took the child 8 s more)
    for model in (str(broken), "json:no_such_function", str(tmp_path / "missing.onnx")):
        done = accelbench("tune", model, "--store", str(store))
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("accelbench: error:") and done.stderr.count("\n") == 1
    assert not store.exists() or not list(store.glob("runs/*"))
