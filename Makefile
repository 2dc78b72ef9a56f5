# Set-up is part of every target: a fresh clone needs only `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

$(BIN)/exactform: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test]'
	touch $@

.PHONY: demo test bench
demo: $(BIN)/exactform
	PATH=$(CURDIR)/$(BIN):$$PATH bash examples/run.sh

test: $(BIN)/exactform
	$(BIN)/python -m pytest

bench: $(BIN)/exactform
	$(BIN)/python -m benchmarks
