"""``python -m dplab ...``: the ``dplab`` command line, for an environment whose scripts
folder is not on PATH."""

import sys

from dplab.cli import main

# Guarded: a process multiprocessing spawns imports the parent's main module again.
if __name__ == "__main__":
    sys.exit(main())
