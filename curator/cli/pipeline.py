"""Subcommands of the pipeline (registered by curator.cli.build_parser)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add this module's subcommands (none yet)."""
