"""``python -m accelbench`` runs the command line."""

from accelbench.cli import main

main()
