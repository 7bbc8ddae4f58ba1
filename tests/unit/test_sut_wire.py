"""The wire to the SUT process: arrays cross exactly, and what a stack could send to the harness that
breaks the wire's rules (pickles, object arrays, lengths that lie, huge headers) is refused at the edge."""

from __future__ import annotations

import json
import socket

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from accelbench.sut import hardening, wire

DTYPES = st.sampled_from([np.float32, np.float64, np.int64, np.int32, np.uint8, np.bool_, np.float16])


@settings(max_examples=60, deadline=None)
@given(arrays=st.lists(hnp.arrays(DTYPES, hnp.array_shapes(min_dims=0, max_dims=4, max_side=7)), max_size=4))
def test_arrays_cross_exactly_and_arrive_writable(arrays: list[np.ndarray]) -> None:
    left, right = wire.pair()
    with left, right:
        wire.send(left, {"op": "infer", "session": 3}, arrays)
        message = wire.receive(right)
    assert message.header == {"op": "infer", "session": 3}
    assert len(message.arrays) == len(arrays)
    for sent, got in zip(arrays, message.arrays, strict=True):
        assert got.dtype == sent.dtype and got.shape == sent.shape
        np.testing.assert_array_equal(got, sent)
        assert got.flags.writeable or got.size == 0


def _raw(sock: socket.socket, header: bytes, body: bytes = b"", total: int | None = None) -> None:
    size = len(header) + len(body) if total is None else total
    sock.sendall(wire.PREFIX.pack(size, len(header)) + header + body)


@pytest.mark.parametrize(
    ("header", "body", "why"),
    [
        (b"\x80\x04pickle", b"", "malformed header"),
        (b"[1, 2]", b"", "not a JSON object"),
        (json.dumps({"arrays": [{"dtype": "|O", "shape": [1]}]}).encode(), b"\0" * 8, "cannot cross"),
        (json.dumps({"arrays": [{"dtype": "<f4", "shape": [4]}]}).encode(), b"\0" * 8, "more bytes"),
        (json.dumps({"arrays": [{"dtype": "<f4", "shape": [1]}]}).encode(), b"\0" * 8, "account for"),
        (json.dumps({"arrays": [{"dtype": "<f4", "shape": [-1]}]}).encode(), b"", "cannot cross"),
        (json.dumps({"arrays": "x"}).encode(), b"", "not a list"),
    ],
)
def test_a_malformed_message_is_refused(header: bytes, body: bytes, why: str) -> None:
    left, right = wire.pair()
    with left, right:
        _raw(left, header, body)
        with pytest.raises(wire.WireError, match=why):
            wire.receive(right)


def test_a_frame_over_the_caps_and_a_closed_wire_are_refused() -> None:
    left, right = wire.pair()
    with left, right:
        left.sendall(wire.PREFIX.pack(wire.FRAME_MAX_BYTES + 1, 2))
        with pytest.raises(wire.WireError, match="over the caps"):
            wire.receive(right)
    left, right = wire.pair()
    with right:
        _raw(left, b'{"op": "x"}', total=100)  # says 100 bytes, sends 11, then leaves
        left.close()
        with pytest.raises(wire.WireError, match="closed"):
            wire.receive(right)


def test_the_sut_environment_keeps_none_of_the_harness_variables() -> None:
    base = {
        "PATH": "/bin",
        "ACCELBENCH_RUNNER_PID": "1",
        "ACCELBENCH_API_KEY": "k",
        "ACCELBENCH_TVM_TRIALS": "4",
    }
    scrubbed = hardening.scrubbed_environment(base, {"HOME": "/scratch"})
    assert scrubbed == {"PATH": "/bin", "ACCELBENCH_TVM_TRIALS": "4", "HOME": "/scratch"}
