# The two commands a new user needs: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Runtime install (no torch): fast enough for a first `make run`.
$(VENV)/.run-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

# Everything the tests need: training extras (torch 2.13.0 CPU) and test tools.
$(VENV)/.dev-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[train,dev]'
	touch $@ $(VENV)/.run-installed

run: $(VENV)/.run-installed
	$(BIN)/switchyard run

test: $(VENV)/.dev-installed
	$(BIN)/ruff check .
	$(BIN)/pytest $(PYTEST_ARGS)

# Style and types: ruff, then mypy over the packages (configured in pyproject.toml).
lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(VENV)/.dev-installed
	$(BIN)/python -m benchmarks.bench_inference

clean:
	rm -rf $(VENV) var
