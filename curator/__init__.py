"""Memory Curator: curate the long-term memory of an autonomous LLM agent."""

__version__ = "0.1.0"
"""The one place the version is written: pyproject.toml reads it, ``curator --version``
prints it, and the AppStream metainfo's newest release must name it (a test checks)."""
