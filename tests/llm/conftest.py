"""Fixtures of the llm tests."""

from tests.llm.llama_server import llama_server

__all__ = ["llama_server"]
