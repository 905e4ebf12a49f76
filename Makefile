# Two commands matter: `make serve` and `make test`. Everything else is optional.
# `make serve` installs the runtime dependencies only; `make test` adds the dev extras (ruff, mypy,
# pytest, Playwright, ...) into the same .venv, recorded by a second stamp.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEV_STAMP := $(VENV)/.dev-installed-stamp

.PHONY: serve test lint typecheck browser-check chromium token bench eval eval-threads clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
	  echo "Thoughtline needs Python 3.11 or newer; '$(PYTHON)' is $$($(PYTHON) --version 2>&1)." >&2; \
	  echo "Install one and run e.g.: make PYTHON=python3.12 serve" >&2; exit 1; }
	@$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); \
	  echo "Could not create $(VENV). On Debian/Ubuntu install the venv module: sudo apt-get install python3-venv" >&2; \
	  exit 1; }

$(STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e .
	touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[dev]'
	touch $(DEV_STAMP)

serve: $(STAMP)
	$(BIN)/thoughtline serve

token: $(STAMP)
	@$(BIN)/thoughtline token

browser-check:
	@sh .ci/check-browser

# Where Debian's chromium is not an option: Playwright's own build (a download of ~170 MB).
chromium: $(DEV_STAMP)
	$(BIN)/playwright install chromium

lint: $(DEV_STAMP)
	$(BIN)/ruff check service tests bench
	$(BIN)/ruff format --check service tests bench

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

# The browser check comes first: before anything is installed, linted or run.
test: browser-check lint typecheck
	$(BIN)/pytest --cov=thoughtline --cov-report=term:skip-covered --cov-fail-under=85

bench: $(DEV_STAMP)
	$(BIN)/python -m bench.run

eval: $(STAMP)
	$(BIN)/python -m bench.eval_locomo
	$(BIN)/python -m bench.eval_threads

eval-threads: $(STAMP)
	$(BIN)/python -m bench.eval_threads
	$(BIN)/python -m bench.thread_latency

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
