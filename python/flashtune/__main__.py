"""`python -m flashtune ARGS`: the bundled flashtune CLI (see flashtune/_cli.py)."""
import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
