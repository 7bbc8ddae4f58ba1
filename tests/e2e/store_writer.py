"""A store writer process for the concurrency tests:
``python -m tests.e2e.store_writer STORE RUN_ID N [START_AT | stdin]``.

Opens (or creates) the store at the same moment as its siblings (at the wall-clock time ``START_AT``
when given, so that interpreter start-up does not spread them out; with ``stdin``, once started it prints
``ready`` and opens the store when a line comes on its standard input, which the test sends to every
sibling at once when all are ready), registers its run and stores N results one transaction each,
re-reading its own results after every write, and printing the count after each commit (so a test that
kills it knows what was committed).
"""

from __future__ import annotations

import sys
import time

from accelbench.head import Head
from accelbench.results import Cell, Result
from accelbench.store import open_store

FINGERPRINT = "feedfacefeedface"


def write(store_path: str, run_id: str, count: int) -> int:
    """Store ``count`` results in a new run (created unless it exists); return how many it holds."""
    with open_store(store_path) as store:
        if run_id not in store.run_ids():
            store.create_run(run_id, {"writer": run_id}, {}, FINGERPRINT)
        for index in range(len(store.results(run_id)), count):
            cell = Cell(workload=f"w{index}", stack="null", scenario="offline", size="tiny")
            head = Head("crashed", f"planted {index}")
            store.add_result(Result(run_id=run_id, cell=cell, head=head, machine_fingerprint=FINGERPRINT))
            assert len(store.results(run_id)) == index + 1
            print(index + 1, flush=True)
        store.set_run_status(run_id, "complete")
        return len(store.results(run_id))


def wait_for_start(start: str) -> None:
    """Wait for the start: ``stdin`` (say ready, then wait for a line) or a wall-clock time."""
    if start == "stdin":
        print("ready", flush=True)
        sys.stdin.readline()
    else:
        time.sleep(max(0.0, float(start) - time.time()))


if __name__ == "__main__":
    if len(sys.argv) > 4:
        wait_for_start(sys.argv[4])
    write(sys.argv[1], sys.argv[2], int(sys.argv[3]))
