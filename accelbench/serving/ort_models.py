"""ONNX Runtime inside a server: one session per exported batch size, requests padded into them.

numpy and onnxruntime only (imported by the server scripts, also from PyTriton's venv, where
``triton_app`` puts this folder on ``sys.path``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

_ORT_TYPES = {"tensor(float)": "float32", "tensor(float16)": "float16", "tensor(int64)": "int64"}


def pad_run(run: Any, batches: list[int], rows: list[dict[str, np.ndarray]]) -> list[np.ndarray]:
    """Run requests' tensors as one batch: concatenated, padded to the smallest size in ``batches``
    that holds them (repeating the last row), and split back into one output per request."""
    counts = [len(next(iter(one.values()))) for one in rows]
    total = sum(counts)
    size = min(b for b in batches if b >= total)
    names = list(rows[0])
    joined = {name: np.concatenate([one[name] for one in rows], axis=0) for name in names}
    padded = {n: np.concatenate([a, np.repeat(a[-1:], size - total, axis=0)]) for n, a in joined.items()}
    output = run(size, padded)[:total]
    return list(np.split(output, np.cumsum(counts)[:-1]))


class OrtModels:
    """ONNX Runtime sessions of one model, one per exported batch size (``models``: rows -> the file's
    path or its bytes); feeds the inputs the graph has."""

    def __init__(self, models: dict[str, str] | dict[str, str | bytes], threads: int) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.sessions = {int(b): ort.InferenceSession(p, options) for b, p in models.items()}
        first = next(iter(self.sessions.values()))
        self.inputs = {one.name for one in first.get_inputs()}
        output = first.get_outputs()[0]
        self.output = output.name
        self.output_row_shape = tuple(d if isinstance(d, int) else -1 for d in output.shape[1:])
        """The output's shape without its batch axis (-1 where the graph does not fix it)."""
        self.output_dtype = np.dtype(_ORT_TYPES.get(output.type, "float32"))

    def run(self, batch: int, tensors: dict[str, np.ndarray]) -> np.ndarray:
        """The first output of the batch-``batch`` session."""
        feed = {name: array for name, array in tensors.items() if name in self.inputs}
        return np.asarray(self.sessions[batch].run([self.output], feed)[0])

    def infer(self, rows: list[dict[str, np.ndarray]]) -> list[np.ndarray]:
        """One output per request in ``rows``."""
        return pad_run(self.run, sorted(self.sessions), rows)
