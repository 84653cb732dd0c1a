"""Keep peewee from importing the PostgreSQL drivers: the store is SQLite only.

peewee tries ``import psycopg`` (and ``psycopg2``) when it is imported, and where a
driver happens to be installed that alone costs about a tenth of a second at every start
of the command, which cron jobs, shells and agents start often. Marking the drivers
absent (only when nothing imported them before) makes peewee take its "not installed"
branch. Imported by :mod:`curator.cli` before anything that imports peewee.
"""

import sys

for _driver in ("psycopg", "psycopg2", "psycopg2cffi"):
    sys.modules.setdefault(_driver, None)  # type: ignore[arg-type]
