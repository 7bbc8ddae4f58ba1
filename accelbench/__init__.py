"""accelbench: a fair, open, hard-to-game benchmark for AI acceleration.

The public API is small: results and their records, the error hierarchy, and the version. Everything
else is reached through the ``accelbench`` command line.
"""

from accelbench.errors import AccelbenchError, CellError, Unavailable, Unsupported, UserError
from accelbench.results import SCHEMA_VERSION, Cell, Result

__version__ = "0.1.0"

__all__ = [
    "SCHEMA_VERSION",
    "AccelbenchError",
    "Cell",
    "CellError",
    "Result",
    "Unavailable",
    "Unsupported",
    "UserError",
    "__version__",
]
