"""``python -m curator`` is the ``curator`` command."""

import sys

from curator.launch import run

sys.exit(run())
