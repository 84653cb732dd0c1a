"""``python -m curator`` is the ``curator`` command."""

import sys

from curator.cli import run

sys.exit(run())
