"""The ONNX exporter's modules, imported ahead by the cell template (``accelbench.cell.isolation``) when
one of the run's stacks reads the model's ONNX file: each such cell's SUT process then finds them
imported instead of importing them again in ``OnnxFileStack.unavailable_reason``.

The template imports what it preloads by name and survives only an ``ImportError``; a module that raises
anything else on import would end the template and every cell of the run with it. This module imports
each exporter module with every failure swallowed: the SUT process imports it again, and its stack
reports the failure as its unavailable reason, for its own cells only.
"""

from __future__ import annotations

import contextlib
import importlib

from accelbench.stacks.onnx_export import EXPORTER_MODULES

for _module in EXPORTER_MODULES:
    with contextlib.suppress(Exception):
        importlib.import_module(_module)
