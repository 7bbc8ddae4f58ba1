"""``python -m accelbench`` runs the command line."""

from accelbench.cli import main

if __name__ == "__main__":
    main()
