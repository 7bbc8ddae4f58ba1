"""Each point's energy (``accelbench.endpoint.energy``): metered where the server runs on this machine."""

from __future__ import annotations

import time

from accelbench.endpoint.energy import PointMeter, point_meter


def _burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_a_remote_server_has_no_energy_and_says_why() -> None:
    meter = point_meter("http://192.0.2.7:8000/v1", started_here=False)  # TEST-NET-1: never this machine
    assert meter.meter is None
    assert (
        meter.note
        == "energy not measured: the server at http://192.0.2.7:8000/v1 is not a process of this machine"
    )
    meter.begin(1)
    assert meter.end(1) is None


def test_a_server_started_here_is_metered_per_point_with_the_run_process_tree() -> None:
    meter = point_meter(None, started_here=True)
    assert meter.meter is not None
    try:
        meter.begin(1)
        time.sleep(0.3)
        idle = meter.end(1)
        meter.begin(2)
        _burn(0.3)
        busy = meter.end(2)
    finally:
        meter.close()
    assert idle is not None and busy is not None
    assert idle.provenance in ("estimated", "measured") and idle.energy_j > 0
    if busy.provenance == "estimated":  # the estimate scales with the tree's CPU seconds
        assert busy.energy_j > idle.energy_j * 1.2, (idle, busy)
        assert meter.note.startswith("cpu-estimate: the run's process tree") and "E = W" in meter.formula


def test_without_a_meter_nothing_is_opened() -> None:
    meter = PointMeter(None, "energy unavailable: no counter")
    meter.begin(4)
    assert meter.end(4) is None and meter.formula == ""
    meter.close()
