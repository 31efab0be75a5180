# Each target does its own set-up: a fresh clone needs only Python 3.11, Node 20 and npm.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
NODE_STAMP := node_modules/.installed-stamp

.PHONY: setup demo test test-long lint typecheck pytest bench docs dist clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

setup: $(STAMP) $(NODE_STAMP)

## The main job on a bundled real agent log.
demo: setup
	$(VENV)/bin/agentscope demo

## The whole test suite: lint, types, tests (pytest's "no tests collected" counts as a failure).
## Every phase runs even when an earlier one failed, and the last line lists each phase's result.
test: setup
	@fail=""; for phase in lint typecheck pytest; do \
	  $(MAKE) --no-print-directory $$phase || fail="$$fail $$phase"; done; \
	  if [ -n "$$fail" ]; then echo "make test: FAILED:$$fail"; exit 1; fi; \
	  echo "make test: lint, typecheck and pytest passed"

lint: $(STAMP)
	$(VENV)/bin/ruff check agentscope tests benchmarks tools

typecheck: $(STAMP)
	$(VENV)/bin/mypy --strict agentscope

## Two runs: everything but the real-browser tests on $(PYTEST_WORKERS) worker processes
## (pytest-xdist; each file's tests on one worker: a notebook's cells share one kernel), then the
## browser tests alone, one at a time (they time the page's round trip). Both runs always run (a
## red first run does not hide the browser tests' state); the target fails if either failed, and
## says which. "No tests collected" fails a run, unless PYTEST_ARGS (e.g. -k) chose the tests.
PYTEST_WORKERS ?= 2
pytest: setup
	@$(VENV)/bin/pytest -n $(PYTEST_WORKERS) --dist loadfile -m "not slow and not browser" --nbval-lax tests notebooks $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ] && [ -z "$(PYTEST_ARGS)" ]; then echo "pytest collected no tests"; one=1; \
	  elif [ $$rc -eq 0 ] || [ $$rc -eq 5 ]; then one=0; else one=$$rc; fi; \
	  $(VENV)/bin/pytest -m "browser and not slow" tests $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ] && [ -z "$(PYTEST_ARGS)" ]; then echo "pytest collected no browser tests"; two=1; \
	  elif [ $$rc -eq 0 ] || [ $$rc -eq 5 ]; then two=0; else two=$$rc; fi; \
	  echo "make pytest: main run exit $$one, browser run exit $$two"; \
	  [ $$one -eq 0 ] && [ $$two -eq 0 ]

bench: setup
	$(PY) -m benchmarks $(BENCH_ARGS)

## The distributions: dist/agentscope_timetravel-<version>-py3-none-any.whl and the sdist
## (the wheel is built from the sdist, so both are complete). Install with `pip install dist/*.whl`.
dist: $(STAMP)
	rm -rf dist build
	$(PY) -m build --outdir dist .

clean:
	rm -rf $(VENV) node_modules dist .pytest_cache .mypy_cache .ruff_cache

## The long runs: the differential run (>= 10,000 generated machines against real XState) and the
## fuzz run (10^5 mutated inputs per reader, the query parser and the follow tail; tests/fuzz_harness.py).
test-long: setup
	$(VENV)/bin/pytest -m slow $(PYTEST_ARGS)

## The documentation site (strict: warnings fail), with the gallery's players and pictures and
## docs/cli.md's flag tables (from the argument parser) rebuilt.
docs: setup
	$(PY) tools/gen_cli_docs.py
	$(PY) docs/gallery/make_gallery.py
	$(VENV)/bin/mkdocs build --strict --site-dir site
