# Two entry points: `make demo` runs the main job on its embedded defaults,
# `make test` runs every check. Both create the virtualenv they need.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/airflow-quota simulate

test: lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check airflow_quota_provider tests benchmarks
	$(BIN)/ruff format --check airflow_quota_provider tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/engine.py
	$(BIN)/python benchmarks/simulate.py
	$(BIN)/python benchmarks/trace_replay.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
