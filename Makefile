# The two commands a new user needs: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test lint bench clean browser

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

# openapi-python-client generates a client from /openapi.json in the tests; every release pins
# typer below the service's, so it lives in an environment of its own.
CLIENT_GENERATOR := $(VENV)/tools/openapi-python-client/bin/openapi-python-client
$(CLIENT_GENERATOR): | $(BIN)/python
	$(PYTHON) -m venv $(VENV)/tools/openapi-python-client
	$(VENV)/tools/openapi-python-client/bin/pip install -q openapi-python-client==0.29.1

test: $(VENV)/.dev-installed $(CLIENT_GENERATOR) browser
	$(BIN)/ruff check .
	$(BIN)/pytest $(PYTEST_ARGS)

# The connect page's browser tests drive Debian's Chromium (Playwright's own download cannot
# be used here); installed once, with apt-get, as root or through sudo.
CHROMIUM ?= /usr/bin/chromium
browser:
	@test -x $(CHROMIUM) || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }

# Style and types: ruff, then mypy over the packages (configured in pyproject.toml).
lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(VENV)/.dev-installed
	$(BIN)/python -m benchmarks.bench_inference

clean:
	rm -rf $(VENV) var
