"""Untrusted files are never unpickled: a malicious pickle offered as a model, config, chip file or MLPerf
CSV is refused with one line naming the file, and its payload (writing a marker file) never runs."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest

from tests.fuzz.harness import expect_user_error, tree_digest

PACKAGE = Path(__file__).parents[2] / "accelbench"
ALLOWED = {
    # its own result, written by its own rank-0 process into a private mkdtemp folder (0700) of this run
    "training/distributed.py": "pickle.loads(result.read_bytes())",
}


class _Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (exec, (f"open({str(self.marker)!r}, 'w').write('pwned')",))


def _malicious(path: Path, marker: Path) -> Path:
    path.write_bytes(pickle.dumps(_Payload(marker)))
    return path


def test_the_payload_is_real(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    pickle.loads(_malicious(tmp_path / "x.pkl", marker).read_bytes())  # proves the payload
    assert marker.read_text() == "pwned"


@pytest.mark.parametrize(
    ("name", "command"),
    [
        ("model.onnx", ["tune", "{file}", "--stacks", "onnxruntime"]),
        ("model.pt", ["tune", "{file}", "--stacks", "torch-eager"]),
        ("weights.safetensors", ["tune", "{file}"]),
        ("run.toml", ["run", "--no-probe", "--config", "{file}"]),
        ("chips.toml", ["history", "--chips", "{file}"]),
        ("rows.csv", ["import-mlperf", "{file}"]),
    ],
)
def test_a_malicious_pickle_is_refused(tmp_path: Path, store: Path, name: str, command: list[str]) -> None:
    marker = tmp_path / "marker"
    path = _malicious(tmp_path / name, marker)
    before = tree_digest(store)
    args = [part.replace("{file}", str(path)) for part in command] + ["--store", str(store)]
    expect_user_error("untrusted-pickle", args, str(path))
    assert not marker.exists()
    assert tree_digest(store) == before


def test_the_package_never_unpickles_a_file() -> None:
    """No pickle/torch.load/np.load(allow_pickle)/joblib load in the package except the listed ones."""
    risky = re.compile(
        r"pickle\.loads?\(|torch\.load\(|jit\.load\(|allow_pickle\s*=\s*True|joblib\.load|dill\.|cloudpickle\.load"
        r"|read_pickle|weights_only\s*=\s*False"
    )
    found = {}
    for path in PACKAGE.rglob("*.py"):
        for line in path.read_text().splitlines():
            if risky.search(line) and not line.lstrip().startswith("#"):
                found[path.relative_to(PACKAGE).as_posix()] = line.strip()
    unexpected = {k: v for k, v in found.items() if ALLOWED.get(k) not in v}
    assert not unexpected, unexpected
    torch_loads = [p for p in PACKAGE.rglob("*.py") if "torch.load(" in p.read_text()]
    for path in torch_loads:
        assert all(
            "weights_only=True" in line for line in path.read_text().splitlines() if "torch.load(" in line
        )
