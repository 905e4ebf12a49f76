# Two commands matter: `make serve` and `make test`. Everything else is optional.
# `make serve` installs the runtime dependencies only; `make test` adds the dev extras (ruff, mypy,
# pytest, Playwright, ...) into the same .venv, recorded by a second stamp.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEV_STAMP := $(VENV)/.dev-installed-stamp
# The SAM CLI pins click and pydantic versions the service cannot use: it gets a venv of its own.
SAM_VENV := $(VENV)/tools/sam
SAM_STAMP := $(SAM_VENV)/.installed-stamp
# Fine-tuning the embedder (issue 8) needs torch: a venv of its own, never part of serve or test.
FT_PYTHON ?= python3.11
FT_VENV ?= $(VENV)/tools/finetune
FT_STAMP := $(FT_VENV)/.installed-stamp
FT_SPLITS ?= bench/data/reasoning/train.json
FT_OUT ?= build/minilm-finetuned-int8.onnx

.PHONY: serve test lint typecheck browser-check node-check chromium token bench eval eval-threads finetune clean

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
$(SAM_STAMP): infra/aws/sam-requirements.txt $(STAMP)
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/python -m pip install -q -r infra/aws/sam-requirements.txt
	touch $(SAM_STAMP)

# torch goes in first, alone, so nothing else can pull a different build of it.
$(FT_STAMP): bench/finetune/requirements.txt
	$(FT_PYTHON) -m venv $(FT_VENV)
	$(FT_VENV)/bin/python -m pip install -q "$$(grep '^torch==' bench/finetune/requirements.txt)"
	$(FT_VENV)/bin/python -m pip install -q -r bench/finetune/requirements.txt
	touch $(FT_STAMP)

serve: $(STAMP)
	$(BIN)/thoughtline serve

token: $(STAMP)
	@$(BIN)/thoughtline token

browser-check:
	@sh .ci/check-browser

node-check:
	@sh .ci/check-node

# Where Debian's chromium is not an option: Playwright's own build (a download of ~170 MB).
chromium: $(DEV_STAMP)
	$(BIN)/playwright install chromium

lint: $(DEV_STAMP)
	$(BIN)/ruff check service tests bench
	$(BIN)/ruff format --check service tests bench

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

# The browser and npm checks come first: before anything is installed, linted or run.
# $(SAM_STAMP): tests/test_infra.py runs `sam validate --lint` offline from that venv.
test: browser-check node-check lint typecheck $(SAM_STAMP)
	$(BIN)/pytest --cov=thoughtline --cov-report=term:skip-covered --cov-fail-under=85

bench: $(DEV_STAMP)
	$(BIN)/python -m bench.run

# --alternatives both: each split alone and with its agent-written alternatives, the README's two columns.
eval: $(STAMP)
	$(BIN)/python -m bench.eval_reasoning --splits dev,test --alternatives both --locomo
	$(BIN)/python -m bench.eval_related --splits train,dev,test
	$(BIN)/python -m bench.eval_threads

eval-threads: $(STAMP)
	$(BIN)/python -m bench.eval_threads
	$(BIN)/python -m bench.thread_latency

# Fine-tune MiniLM on the train split and write an int8 ONNX file search loads with --model.
finetune: $(FT_STAMP)
	$(FT_VENV)/bin/python -m bench.finetune.finetune_embedder --split $(FT_SPLITS) --out $(FT_OUT) $(FT_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
