"""The launcher of ``transformers serve`` for ``accelbench.endpoint.servers``: run as
``python -m accelbench.endpoint.transformers_app OWNER_PID FOLDER ARGS...``.

It watches its owner (the cell process: when that is gone, the session is killed, so a cell killed
with SIGKILL leaves no server), moves into ``FOLDER`` (so the served model's id is the short relative
name the arguments give) and runs the ``transformers`` CLI with ``ARGS``.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> int:
    """Watch the owner, enter the folder, run ``transformers ARGS``."""
    from accelbench.serving.sessions import watch_owner

    owner, folder, args = int(argv[0]), argv[1], argv[2:]
    watch_owner(owner, lambda: None)
    os.chdir(folder)
    from transformers.cli.transformers import main as transformers_main

    sys.argv = ["transformers", *args]
    return int(transformers_main() or 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
