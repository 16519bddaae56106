# airbench-nb: `make demo` runs the pipeline offline on CPU; `make test` runs the whole test suite.
# Both set the project up first when needed (venv .venv, torch CPU wheel, the kit, espeak-ng and sox).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.airbench-installed
ARGS ?=

.PHONY: setup sysdeps demo test lab lint format clean-reports

setup: $(STAMP) sysdeps

$(STAMP): pyproject.toml scripts/setup.sh
	PYTHON=$(PYTHON) VENV=$(VENV) bash scripts/setup.sh python
	@touch $(STAMP)

sysdeps:
	@bash scripts/setup.sh system

demo: setup
	$(BIN)/airbench-nb run $(ARGS)

test: setup
	$(BIN)/python -m pytest $(ARGS)

lab: setup
	$(BIN)/jupyter lab --notebook-dir=notebooks $(ARGS)

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

format: setup
	$(BIN)/ruff check --fix . && $(BIN)/ruff format .

clean-reports:
	rm -rf reports/
