"""What the cell template imports ahead (``accelbench.cell.isolation``), each module with any failure
swallowed.

The template is a multiprocessing forkserver, which survives only an ``ImportError`` of the modules it
preloads itself: a library that raises anything else on import (a broken build of torch or LoadGen)
ended the template, and the run with two tracebacks and "Aborted.". It now preloads this module alone,
which imports the modules named in ``MODULES_VARIABLE`` (set by the runner for the template's start and
taken out of the template's environment here, so no cell inherits it). A module that fails here is
imported again by the cell or SUT process that needs it, whose failure becomes that cell's status.
"""

from __future__ import annotations

import contextlib
import importlib
import os

MODULES_VARIABLE = "ACCELBENCH_TEMPLATE_IMPORTS"
"""Comma-separated module names, read once when the template starts."""

for _name in filter(None, os.environ.pop(MODULES_VARIABLE, "").split(",")):
    with contextlib.suppress(Exception):
        importlib.import_module(_name)
