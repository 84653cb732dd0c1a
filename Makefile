# Two commands for a fresh machine:
#   make run   - set everything up, create the demo database on first run, start the application
#   make test  - set everything up and run the whole suite (ruff check + format, mypy, pytest)

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_DB ?= .demo/curator.sqlite

.PHONY: run test lint typecheck pytest bench screenshots clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required (found %s); set PYTHON=python3.11" % sys.version.split()[0])'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip "setuptools>=77" wheel
	$(PY) -m pip install --quiet -e '.[demo,test,dev]'
	@touch $(STAMP)

run: $(STAMP)
	$(PY) -m curator --db $(DEMO_DB) demo --if-missing
	$(PY) -m curator --db $(DEMO_DB)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

pytest: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest

test: lint typecheck pytest

bench: $(STAMP)
	$(PY) benchmarks/bench_dedup.py
	$(PY) benchmarks/bench_classify.py
	$(PY) benchmarks/bench_generate.py
	$(PY) benchmarks/bench_search.py
	QT_QPA_PLATFORM=offscreen $(PY) benchmarks/bench_episode_table.py

screenshots: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) packaging/screenshots.py docs/screenshots

clean:
	rm -rf $(VENV) .demo build dist *.egg-info
