# Needs only Python >= 3.11 and make: everything else goes into .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python

.PHONY: install install-test run run-cluster test test-newest test-oldest lock lint format typecheck bench screenshots clean

# One line per install step; pip's own output (and the build backend's warnings) goes to
# .venv/pip.log, printed only when the step fails.
PIP := $(PY) -m pip install --quiet --disable-pip-version-check
# The checkout's environment installs the versions constraints.txt holds (`make lock` makes
# it); pyproject.toml's ranges are what the distribution's users get.
LOCKED := $(PIP) -c constraints.txt
LOGGED = > $(VENV)/pip.log 2>&1 || { cat $(VENV)/pip.log; exit 1; }

$(PY):
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required (set PYTHON=...)")'
	@echo "creating .venv with $$($(PYTHON) --version) ..."
	@$(PYTHON) -m venv $(VENV)
	@$(PIP) --upgrade pip $(LOGGED)

# A stamp per extra, redone whenever pyproject.toml changes.
$(VENV)/.installed: pyproject.toml constraints.txt | $(PY)
	@echo "installing rq-webhook-receiver into .venv ..."
	@# Called webhook-receiver before: a .venv made then holds it too (its pytest plugin twice).
	@$(PY) -m pip uninstall --quiet --yes webhook-receiver $(LOGGED)
	@$(LOCKED) -e . $(LOGGED)
	@command -v redis-server >/dev/null 2>&1 || { \
		echo "installing an embedded redis-server (none on the PATH) ..."; \
		$(LOCKED) -e '.[embedded-redis]' $(LOGGED); }
	@touch $@

$(VENV)/.installed-test: pyproject.toml constraints.txt $(VENV)/.installed
	@echo "installing the test tools into .venv ..."
	@$(LOCKED) -e '.[test]' $(LOGGED)
	@touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

run: install
	@PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/webhooks dev

# The same stack on a local Redis Cluster of its own (three primaries, three replicas).
run-cluster: install
	@PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/webhooks dev --cluster

lint: install-test
	$(BIN)/ruff check app workers pytest_webhook_receiver tests examples bench docs/screenshots
	$(BIN)/ruff format --check app workers pytest_webhook_receiver tests examples bench docs/screenshots
	$(PY) tests/assertions_lint.py

format: install-test
	$(BIN)/ruff check --fix app workers pytest_webhook_receiver tests examples bench docs/screenshots
	$(BIN)/ruff format app workers pytest_webhook_receiver tests examples bench docs/screenshots

typecheck: install-test
	$(BIN)/mypy

# Under coverage.py (pyproject.toml's [tool.coverage.*]): every process the suite starts is
# measured; the files are combined and the figure printed after the run (docs/internals.md).
COVERAGE_DATA := $(CURDIR)/var/coverage

test: install-test lint typecheck
	@rm -rf $(COVERAGE_DATA) && mkdir -p $(COVERAGE_DATA)
	COVERAGE_FILE=$(COVERAGE_DATA)/data $(BIN)/coverage run -m pytest -n 4 --dist loadgroup
	@COVERAGE_FILE=$(COVERAGE_DATA)/data $(BIN)/coverage combine -q
	@COVERAGE_FILE=$(COVERAGE_DATA)/data $(PY) tests/coverage_summary.py

# The newest releases in a throwaway venv: every locked package at the newest its range
# admits and the watched libraries past their ranges; mypy and the tests that pin RQ's,
# rq-dashboard's, uvicorn's and Starlette's internals, and the end-to-end tests, run there.
# Says which constraints.txt entries to move and which pins can be widened.
test-newest: install-test
	$(PY) tests/newest.py

# constraints.txt anew: the newest releases pyproject.toml's ranges admit, every extra the
# Makefile installs, resolved in a throwaway venv. Then `make test`, and commit both.
lock: install-test
	$(PY) tests/lock.py

# The same tests on the floor (>=) of every requirement pyproject.toml claims, in a
# throwaway venv: a floor that does not resolve or fails is a floor to raise.
test-oldest: install-test
	$(PY) tests/oldest.py

# Not part of `make test`: about 17 minutes of load. Needs wrk (apt-get install wrk).
bench: install-test
	$(PY) bench/run.py --json bench/results/latest.json

# The docs' screenshots of the Events page, from a real stack (needs chromium and its driver).
screenshots: install-test
	$(PY) docs/screenshots/take.py

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
