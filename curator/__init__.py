"""Memory Curator: curate the long-term memory of an autonomous LLM agent."""

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a Ctrl-C may come

__version__ = "0.1.0"
"""The one place the version is written: pyproject.toml reads it, ``curator --version``
prints it, and the AppStream metainfo's newest release must name it (a test checks)."""

if TYPE_CHECKING:  # type checkers see the class; at run time it is loaded when first named
    from curator.api import Curator

__all__ = ["Curator", "__version__"]


def __getattr__(name: str) -> object:
    """``from curator import Curator`` without importing the store on ``import curator``.

    The CLI, the window and ``python -m curator`` start from this package; loading the
    database layer here would slow every start for a name only API users ask for.
    """
    if name == "Curator":
        from curator.api import Curator

        return Curator
    raise AttributeError(f"module 'curator' has no attribute {name!r}")
