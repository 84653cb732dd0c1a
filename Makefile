# Two commands for a fresh machine:
#   make run   - set everything up, create the demo database on first run, start the application
#   make test  - set everything up and run the whole suite (ruff check + format, mypy, pytest)
# Desktop build (see README, "Install as a desktop application"):
#   make dist               - the PyInstaller bundle laid out as a prefix, and its .tar.gz
#   make install-desktop    - install it for the current user ($(PREFIX), $$XDG_DATA_HOME)
#   make uninstall-desktop  - remove exactly what install-desktop installed

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_DB ?= .demo/curator.sqlite
PREFIX ?= $(HOME)/.local
# pytest workers: one a core and one more by default (tests/conftest.py says why);
# TEST_WORKERS=0 runs the suite in this process.
TEST_WORKERS ?= auto
VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' curator/__init__.py)
DIST_TREE := dist/memory-curator-$(VERSION)
TARBALL := $(DIST_TREE)-linux-$(shell uname -m).tar.gz
DIST_SOURCES := pyproject.toml $(shell find curator resources packaging -type f ! -path '*/__pycache__/*')

.PHONY: run test lint typecheck pytest bench screenshots dist install-desktop uninstall-desktop clean

# llama-cpp-python compiles llama.cpp from source. Its default, -march=native, uses every
# instruction set the processor announces, AMX included, which a kernel or hypervisor may
# leave disabled: the first matrix product then dies with SIGILL. So on x86-64 it is built
# for AVX2 (and AVX-512 where the processor has it), never AMX. CMAKE_ARGS in the
# environment replaces this (CUDA: see README). The wheel cache is bypassed, since it
# would hand back a build made with other flags; a change of flags rebuilds. The wheel is
# kept in $(VENV)/wheels, where the packaging test's clean environment finds it.
ifeq ($(shell uname -m),x86_64)
LLAMA_DEFAULT_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON$(if $(shell grep -m1 -ow avx512f /proc/cpuinfo 2>/dev/null), -DGGML_AVX512=ON)
endif
LLAMA_ARGS := $(or $(CMAKE_ARGS),$(LLAMA_DEFAULT_ARGS))
LLAMA_STAMP := $(VENV)/.llama-cmake-args

$(STAMP): pyproject.toml Makefile
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required (found %s); set PYTHON=python3.11" % sys.version.split()[0])'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip "setuptools>=77" wheel
	@if [ "$$(cat $(LLAMA_STAMP) 2>/dev/null)" != "$(LLAMA_ARGS)." ]; then \
	  echo "building llama-cpp-python (CMAKE_ARGS=$(LLAMA_ARGS)): several minutes"; \
	  rm -rf $(VENV)/wheels && \
	  CMAKE_ARGS="$(LLAMA_ARGS)" $(PY) -m pip wheel --quiet --no-cache-dir --no-deps \
	    -w $(VENV)/wheels "llama-cpp-python>=0.3.9" && \
	  $(PY) -m pip install --quiet --force-reinstall --no-deps $(VENV)/wheels/llama_cpp_python-*.whl && \
	  echo "$(LLAMA_ARGS)." > $(LLAMA_STAMP); \
	fi
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

# The package's bytecode is written first: where PYTHONDONTWRITEBYTECODE is set, each of
# the suite's several hundred child processes (the CLI, servers, kill victims) would
# otherwise compile every module it imports again (about 0.07 s of CPU each).
pytest: $(STAMP)
	$(PY) -m compileall -q curator tests > /dev/null
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest --durations=40 -n $(TEST_WORKERS) --dist loadfile

# pytest rewrites the assertions of every test module when it imports it, and keeps the
# result only where bytecode may be written: in a fresh clone every worker rewrote all of
# them at once (11.5 s of CPU a worker; 5.3 s with the rewritten modules there). They are
# written once here instead, on the core mypy leaves idle, and the workers read them.
test: lint
	@PYTHONDONTWRITEBYTECODE= QT_QPA_PLATFORM=offscreen $(PY) -m pytest --collect-only -q \
	  -p no:cacheprovider > /dev/null 2>&1 & collecting=$$!; \
	  $(MAKE) --no-print-directory typecheck; checked=$$?; wait $$collecting; exit $$checked
	@$(MAKE) --no-print-directory pytest

bench: $(STAMP)
	$(PY) benchmarks/bench_dedup.py
	$(PY) benchmarks/bench_classify.py
	$(PY) benchmarks/bench_generate.py
	$(PY) benchmarks/bench_search.py
	QT_QPA_PLATFORM=offscreen $(PY) benchmarks/bench_episode_table.py
	QT_QPA_PLATFORM=offscreen $(PY) benchmarks/bench_gui_responsiveness.py
	$(PY) benchmarks/bench_poisoning.py
	$(PY) benchmarks/bench_detector.py
	QT_QPA_PLATFORM=offscreen $(PY) benchmarks/bench_commit.py
	$(PY) benchmarks/bench_whatif.py
	QT_QPA_PLATFORM=offscreen $(PY) benchmarks/bench_decay_chart.py

screenshots: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) packaging/screenshots.py docs/screenshots
	QT_QPA_PLATFORM=offscreen $(PY) packaging/screenshot_flagged.py docs/screenshots
	QT_QPA_PLATFORM=offscreen $(PY) packaging/screenshot_insights.py docs/screenshots

# Rebuilt only when a source changed; nice: the build uses every core for a minute.
dist: $(TARBALL)

$(TARBALL): $(STAMP) $(DIST_SOURCES)
	nice $(PY) packaging/build_dist.py dist

# The installer needs only the standard library: it runs without the venv.
install-desktop: $(TARBALL)
	$(PYTHON) packaging/desktop_install.py install $(DIST_TREE) --prefix $(PREFIX)

uninstall-desktop:
	$(PYTHON) packaging/desktop_install.py uninstall --prefix $(PREFIX)

clean:
	rm -rf $(VENV) .demo build dist *.egg-info
