"""Reading files accelbench did not just write itself: the guarded reader (``reader``), whose public
names are these (``__all__``: the one list of them)."""

from accelbench.files.reader import (
    MAX_FILE_BYTES,
    MAX_MAGNITUDE,
    MAX_NESTING,
    UnreadableFile,
    check_schema_version,
    json_text,
    number_problem,
    read_bytes,
    read_json,
    read_text,
)

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_MAGNITUDE",
    "MAX_NESTING",
    "UnreadableFile",
    "check_schema_version",
    "json_text",
    "number_problem",
    "read_bytes",
    "read_json",
    "read_text",
]
