# Set-up is part of every target: a fresh clone needs only `make demo` and `make test`.
PY ?= python3
VENV := .venv
# torch==2.13.0 from the CPU index (PyPI's default build is CUDA's); TORCH_INDEX= to use your pip configuration
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
BIN := $(VENV)/bin

$(BIN)/exactform: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q --retries 1 torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/pip install -q -e '.[test]'
	touch $@

.PHONY: demo test bench proofs-coq
demo: $(BIN)/exactform
	PATH=$(CURDIR)/$(BIN):$$PATH bash examples/run.sh

# The whole suite, on every core (pytest-xdist; a test file stays on one worker), and its wall time.
test: $(BIN)/exactform
	@start=$$(date +%s); $(BIN)/python -m pytest -n auto --dist loadfile; code=$$?; \
	echo "make test: $$(( $$(date +%s) - start )) s wall"; exit $$code

bench: $(BIN)/exactform
	$(BIN)/python -m benchmarks

# The Coq theorems (exactform/proofs/coq/): Debian's `coq` package (Coq 8.16, standard library
# reals only) when coqc is absent (CI runs as root), then every file checked and every main
# theorem's axioms listed.  About 26 s of CPU (12 files, 25 theorems).
proofs-coq:
	command -v coqc >/dev/null || { apt-get update -qq && apt-get install -y -qq coq; }
	$(PY) exactform/proofs/coq_theorems.py
