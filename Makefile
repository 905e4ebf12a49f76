# Two commands matter: `make serve` and `make test`. Everything else is optional.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: serve test lint typecheck bench eval clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[dev]'
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/thoughtline serve

lint: $(STAMP)
	$(BIN)/ruff check service tests bench
	$(BIN)/ruff format --check service tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

test: lint typecheck
	$(BIN)/pytest --cov=thoughtline --cov-report=term:skip-covered --cov-fail-under=85

bench: $(STAMP)
	$(BIN)/python -m bench.run

eval: $(STAMP)
	$(BIN)/python -m bench.eval_reasoning --splits dev,test --locomo

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
