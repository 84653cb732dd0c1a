"""Pure domain logic of the curator: no Qt, no database, no model backend.

* :mod:`curator.core.scoring` - importance decay and the time-invariant rank key.
* :mod:`curator.core.quality` - the minimum-length quality gate.
* :mod:`curator.core.parsing` - tolerant JSON-array parsing of LLM output.
* :mod:`curator.core.dedup` - the SKIP / UPDATE / ADD dedup gate.

Everything here depends only on the standard library, numpy and rapidfuzz, so it can
be tested and benchmarked without a display or a database;
``tests/core/test_core_is_qt_free.py`` enforces that.
"""
