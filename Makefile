# Two entry points: `make demo` runs the main job on its embedded defaults,
# `make test` runs every check. Both create the virtualenv they need.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test check test-compat lint typecheck unit fast bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,report]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/airflow-quota demo $(if $(KEEP),--keep,)

test: lint typecheck unit

# The minute-by-minute loop: lint, types, and every test that starts no Airflow process
# and no browser (pytest -m 'not slow'). `make test` runs those and the slow ones.
check: lint typecheck fast

fast: $(STAMP)
	$(BIN)/pytest -n $(JOBS) -m 'not slow'

lint: $(STAMP)
	$(BIN)/ruff check airflow_quota_provider tests benchmarks dags compat
	$(BIN)/ruff format --check airflow_quota_provider tests benchmarks dags compat

typecheck: $(STAMP)
	$(BIN)/mypy

# Two test processes (pytest-xdist), each module in one of them: the end-to-end
# modules mostly wait on Airflow's loops, so two run side by side on 2 cores.
JOBS ?= 2

unit: $(STAMP)
	$(BIN)/pytest -n $(JOBS) --dist loadfile

# The other supported Airflow release lines, each in .venv-compat/LINE (compat/lines.py).
test-compat: $(STAMP)
	$(BIN)/python -m compat.lines test $(LINES) $(if $(HOW),--how $(HOW),)

bench: $(STAMP)
	$(BIN)/python benchmarks/engine.py
	$(BIN)/python benchmarks/simulate.py
	$(BIN)/python benchmarks/trace_replay.py
	$(BIN)/python benchmarks/emulator.py
	$(BIN)/python benchmarks/view.py

clean:
	rm -rf $(VENV) .venv-compat .mypy_cache .pytest_cache .ruff_cache

# The browser test drives Debian's chromium; as root, install it when it is missing.
.PHONY: chromium
unit: chromium
chromium:
	@if [ ! -x /usr/bin/chromium ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get install -y -q chromium chromium-driver \
		|| (apt-get update -q && apt-get install -y -q chromium chromium-driver); \
	fi
