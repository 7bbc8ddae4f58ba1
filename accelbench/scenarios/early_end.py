"""A LoadGen test that ends for its caller at the SUT's first error.

LoadGen's Python API has no abort: once ``StartTest`` runs, a server-scenario test issues queries on its
schedule until its minimum duration is met, and a single-stream one until its minimum count, however
quickly a failed SUT completes them. So a server that died in the first second of a probe kept the cell
busy for the rest of it (23-35 s of failing queries, measured in ``tests/e2e/test_serving.py``'s killed
server), and a crashed stack likewise. Here the test runs in a thread of its own and the caller waits for
either its return or the SUT's first error; at the error the caller goes on (the cell fails, and its
process ends) while LoadGen's thread is left to finish with every query completed at once.

LoadGen runs one test at a time in a process, so a test left running holds a lock until LoadGen returns:
a later test in the same process (a caller that survives the error: a unit test) waits for it, exactly as
long as the caller itself would have waited before. A cell process never runs another test after its
first error, and leaves through ``os._exit`` (multiprocessing's), which does not wait for the thread; the
vault of the logs it leaves is cleared by the runner once the cell's processes are gone
(``accelbench.scenarios.vault.clear``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

POLL_S = 0.05
"""How often the waiting caller looks at the SUT's error (LoadGen tests run for seconds)."""

_ONE_TEST = threading.Lock()
"""Held from a test's start until LoadGen returns from it (its thread releases it)."""


def run_test(start: Callable[[], None], failed: threading.Event) -> bool:
    """Run ``start`` (one whole LoadGen test, its logs' vault included) in a thread of its own. True when
    it returned (its exception, if any, raised here); False as soon as ``failed`` is set while it still
    runs: LoadGen's thread is left to finish by itself."""
    _ONE_TEST.acquire()
    returned = threading.Event()
    raised: list[BaseException] = []

    def body() -> None:
        try:
            start()
        except BaseException as error:  # raised again in the caller's thread
            raised.append(error)
        finally:
            _ONE_TEST.release()
            returned.set()

    threading.Thread(target=body, name="loadgen-test", daemon=True).start()
    while not returned.wait(POLL_S):
        if failed.is_set():
            return False
    if raised:
        raise raised[0]
    return True
