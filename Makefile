# The README's two set-up commands: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test lint install install-dev clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[service]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

# Serves on http://$(HOST):$(PORT); the embedded SQLite database migrates itself on start.
run: install
	$(BIN)/kernelwatch db upgrade
	$(BIN)/kernelwatch serve --host $(HOST) --port $(PORT)

# PostgreSQL tests run when KERNELWATCH_TEST_POSTGRES_URL is set and fail if it is unreachable.
test: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: install-dev
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) .kernelwatch .pytest_cache
