"""``python -m accelbench`` runs the command line (a Ctrl-C while it loads is one line, exit 130)."""

import sys

try:
    from accelbench.cli import console
except KeyboardInterrupt:
    sys.stderr.write("accelbench: error: interrupted\n")
    sys.exit(130)

if __name__ == "__main__":
    console()
