"""``python -m dplab ...``: the ``dplab`` command line, for an environment whose scripts
folder is not on PATH."""

import sys

from dplab.cli import main

sys.exit(main())
