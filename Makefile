# Two commands matter: `make serve` and `make test`. Everything else is optional.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# The SAM CLI pins click and pydantic versions the service cannot use: it gets a venv of its own.
SAM_VENV := $(VENV)/tools/sam
SAM_STAMP := $(SAM_VENV)/.installed-stamp

.PHONY: serve test lint typecheck bench eval clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[dev]'
	touch $(STAMP)

$(SAM_STAMP): infra/aws/sam-requirements.txt $(STAMP)
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/python -m pip install -q -r infra/aws/sam-requirements.txt
	touch $(SAM_STAMP)

serve: $(STAMP)
	$(BIN)/thoughtline serve

lint: $(STAMP)
	$(BIN)/ruff check service tests bench
	$(BIN)/ruff format --check service tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

# $(SAM_STAMP): tests/test_infra.py runs `sam validate --lint` offline from that venv.
test: lint typecheck $(SAM_STAMP)
	$(BIN)/pytest --cov=thoughtline --cov-report=term:skip-covered --cov-fail-under=85

bench: $(STAMP)
	$(BIN)/python -m bench.run

eval: $(STAMP)
	$(BIN)/python -m bench.eval_locomo

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
