"""The Open Inference Protocol (KServe v2) over HTTP with its binary tensor extension, numpy only.

A request is a JSON header followed by the raw bytes of each tensor, in the header's order; the
``Inference-Header-Content-Length`` HTTP header gives the JSON's length in bytes. Each tensor's JSON
entry has ``name``, ``shape``, ``datatype`` and ``parameters.binary_data_size``. The reply has the same
layout for the outputs. Triton speaks it natively; accelbench's Ray Serve app (``ray_app``) speaks it
too, so one client (``accelbench.serving.client``) drives both. This module is imported by the server
scripts as well, so it needs numpy and the standard library alone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np

HEADER_LENGTH = "Inference-Header-Content-Length"
CONTENT_TYPE = "application/octet-stream"

DATATYPES: Mapping[str, str] = {
    "float32": "FP32",
    "float16": "FP16",
    "float64": "FP64",
    "int64": "INT64",
    "int32": "INT32",
    "int8": "INT8",
    "uint8": "UINT8",
    "bool": "BOOL",
}
"""numpy dtype name -> v2 datatype."""
_DTYPES = {v2: np.dtype(name) for name, v2 in DATATYPES.items()}


def datatype(array: np.ndarray) -> str:
    """The v2 datatype of ``array``; ValueError for a dtype the protocol has no name for here."""
    try:
        return DATATYPES[array.dtype.name]
    except KeyError:
        raise ValueError(f"no v2 datatype for numpy dtype {array.dtype.name}") from None


def encode(tensors: Mapping[str, np.ndarray], key: str, outputs: Sequence[str] = ()) -> tuple[bytes, int]:
    """The body and JSON length of a v2 message holding ``tensors`` under ``key`` (``inputs`` or
    ``outputs``); ``outputs`` names the outputs a request asks for in binary."""
    arrays = {name: np.ascontiguousarray(array) for name, array in tensors.items()}
    entries = [
        {
            "name": name,
            "shape": list(array.shape),
            "datatype": datatype(array),
            "parameters": {"binary_data_size": array.nbytes},
        }
        for name, array in arrays.items()
    ]
    document: dict[str, object] = {key: entries}
    if outputs:
        document["outputs"] = [{"name": name, "parameters": {"binary_data": True}} for name in outputs]
    header = json.dumps(document, separators=(",", ":")).encode()
    return header + b"".join(array.tobytes() for array in arrays.values()), len(header)


def decode(body: bytes, header_length: int | None, key: str) -> dict[str, np.ndarray]:
    """The tensors under ``key`` of a v2 message (binary or JSON ``data``), by name, in order."""
    length = len(body) if header_length is None else header_length
    document = json.loads(body[:length])
    if "error" in document:
        raise ValueError(f"server error: {document['error']}")
    tensors: dict[str, np.ndarray] = {}
    offset = length
    for entry in document[key]:
        dtype = _DTYPES[entry["datatype"]]
        size = (entry.get("parameters") or {}).get("binary_data_size")
        if size is None:
            array = np.asarray(entry["data"], dtype=dtype)
        else:
            array = np.frombuffer(body, dtype=dtype, count=size // dtype.itemsize, offset=offset)
            offset += size
        tensors[entry["name"]] = array.reshape(entry["shape"])
    return tensors
