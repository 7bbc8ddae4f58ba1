"""The wire between the harness and the SUT process: a JSON header and raw numpy buffers, never pickle.

A message is one frame on a stream socket: a 12-byte prefix (the frame's length, the header's length),
the JSON header, then the bytes of each array the header lists (its dtype and shape), back to back. It
is sent with one ``sendmsg`` (the arrays are not copied first) and read into one buffer, so a call
costs one system call each way when it fits the socket's buffer. Nothing that crosses is unpickled: the
SUT process runs a stack's code, so a pickle from it could run code in the harness. What the harness
reads back is checked at this edge: a header of bounded size that is a JSON object, plain numeric dtypes
only (no object arrays), arrays whose dtype and shape account for exactly the frame's bytes, and a cap
on the bytes of one frame.
"""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

PREFIX = struct.Struct("!QI")
"""The frame's length after the prefix, and the header's length."""
HEADER_MAX_BYTES = 1 << 20
"""A header holds names, numbers and short strings (a stack's details); 1 MiB is far above any."""
FRAME_MAX_BYTES = 1 << 32
"""One frame of at most 4 GiB (a batch of the largest workload's inputs is far below)."""
ARRAYS_MAX = 64
"""Arrays one message may carry (a workload's inputs, or one output)."""
DTYPE_KINDS = "biuf"
"""bool, signed and unsigned integers, floats: what inputs and outputs of a model are."""
SOCKET_BUFFER_BYTES = 4 << 20
"""Asked of the kernel for each end (it may grant less), so a whole batch crosses in one go."""


class WireError(Exception):
    """A message that breaks the wire's rules (the other side is gone, or sent something malformed)."""


@dataclass(frozen=True, slots=True)
class Message:
    """One message: its header (a JSON object) and the arrays it carries, in order."""

    header: Mapping[str, Any]
    arrays: tuple[np.ndarray, ...] = ()


def pair() -> tuple[socket.socket, socket.socket]:
    """A connected pair of stream sockets with large buffers: (harness end, SUT end)."""
    ends = socket.socketpair()
    for end in ends:
        for option in (socket.SO_SNDBUF, socket.SO_RCVBUF):
            end.setsockopt(socket.SOL_SOCKET, option, SOCKET_BUFFER_BYTES)
    return ends


def send(sock: socket.socket, header: Mapping[str, Any], arrays: Sequence[np.ndarray] = ()) -> None:
    """Send ``header`` and ``arrays`` (made C-contiguous; their dtype and shape go in the header)."""
    plain = [np.asarray(a, order="C") for a in arrays]  # (ascontiguousarray makes a 0-d array 1-d)
    layout = [{"dtype": a.dtype.str, "shape": list(a.shape)} for a in plain]
    text = json.dumps({**header, "arrays": layout}).encode()
    views = [a.reshape(-1).view(np.uint8).data for a in plain if a.nbytes]
    total = len(text) + sum(v.nbytes for v in views)
    try:
        _send_all(sock, [memoryview(PREFIX.pack(total, len(text))), memoryview(text), *views])
    except OSError as err:
        raise WireError(f"the other side closed the wire ({type(err).__name__})") from None


def _send_all(sock: socket.socket, parts: list[memoryview]) -> None:
    while parts:
        sent = sock.sendmsg(parts)
        while parts and sent >= parts[0].nbytes:
            sent -= parts[0].nbytes
            parts.pop(0)
        if parts and sent:
            parts[0] = parts[0][sent:]


def receive(sock: socket.socket) -> Message:
    """The next message; ``WireError`` when the other side is gone or broke the rules."""
    prefix = _read(sock, PREFIX.size)
    total, header_bytes = PREFIX.unpack(prefix)
    if header_bytes > HEADER_MAX_BYTES or header_bytes > total or total > FRAME_MAX_BYTES:
        raise WireError(f"a frame of {total} bytes with a header of {header_bytes} is over the caps")
    frame = _read(sock, total)
    try:
        header = json.loads(bytes(frame[:header_bytes]))
    except ValueError as err:
        raise WireError(f"malformed header: {err}") from None
    if not isinstance(header, dict):
        raise WireError("malformed header: not a JSON object")
    layout = header.pop("arrays", [])
    if not isinstance(layout, list) or len(layout) > ARRAYS_MAX:
        raise WireError("malformed header: 'arrays' is not a list of at most 64 layouts")
    return Message(header, _arrays(frame, header_bytes, layout))


def _read(sock: socket.socket, count: int) -> bytearray:
    """Exactly ``count`` bytes, in a writable buffer (inputs a stack is given were always writable)."""
    data = bytearray(count)
    view, done = memoryview(data), 0
    while done < count:
        try:
            got = sock.recv_into(view[done:])
        except OSError as err:
            raise WireError(f"the other side closed the wire ({type(err).__name__})") from None
        if got == 0:
            raise WireError("the other side closed the wire")
        done += got
    return data


def _arrays(frame: bytearray, offset: int, layout: list[Any]) -> tuple[np.ndarray, ...]:
    arrays = []
    for item in layout:
        dtype, shape = _layout(item)
        size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if offset + size > len(frame):
            raise WireError("the arrays' dtypes and shapes say more bytes than the frame holds")
        if size == 0:
            arrays.append(np.zeros(shape, dtype))
            continue
        arrays.append(
            np.frombuffer(frame, dtype=dtype, count=size // dtype.itemsize, offset=offset).reshape(shape)
        )
        offset += size
    if offset != len(frame):
        raise WireError(f"a frame of {len(frame)} bytes whose header and arrays account for {offset}")
    return tuple(arrays)


def _layout(layout: Any) -> tuple[np.dtype[Any], tuple[int, ...]]:
    if not isinstance(layout, dict):
        raise WireError("malformed array layout")
    try:
        dtype = np.dtype(str(layout["dtype"]))
        shape = tuple(int(n) for n in layout["shape"])
    except (KeyError, TypeError, ValueError) as err:
        raise WireError(f"malformed array layout: {err}") from None
    if dtype.kind not in DTYPE_KINDS or dtype.hasobject or any(n < 0 for n in shape) or len(shape) > 16:
        raise WireError(f"an array of dtype {dtype.str} and shape {shape} cannot cross the wire")
    return dtype, shape


def texts(mapping: Mapping[Any, Any]) -> dict[str, str]:
    """``mapping`` as the wire carries a stack's details or versions: keys and values as text."""
    return {str(k): str(v) for k, v in dict(mapping).items()}
