# kioku: every target creates or reuses .venv at the repo root.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export SAM_CLI_TELEMETRY := 0

# sam build needs the Lambda runtime's Python (3.13) on PATH: take it from PATH or from pyenv.
PY313_DIR := $(shell v=$$(pyenv versions --bare 2>/dev/null | grep '^3\.13' | tail -1); \
	if [ -n "$$v" ]; then echo "$$(pyenv root)/versions/$$v/bin"; else dirname "$$(command -v python3.13 || echo /nonexistent/python3.13)"; fi)

.PHONY: run test lint bench build events venv clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,relay]'
	@touch $(STAMP)

venv: $(STAMP)

## make run: the local playground (real handlers, embedded moto, no Discord or AWS needed)
run: venv
	$(BIN)/kioku playground $(ARGS)

## make test: lint, template validation and the whole test suite
test: lint
	$(BIN)/pytest

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/cfn-lint template.yaml
	$(BIN)/sam validate --lint --template template.yaml

## make bench: cold start, warm PING, memory stages; prints numbers
bench: venv
	$(BIN)/python -m bench

## make build: sam build for arm64 with python3.13 (found on PATH or through pyenv)
build: venv
	@test -x "$(PY313_DIR)/python3.13" || { echo "python3.13 not found: install it (pyenv install 3.13) or put it on PATH"; exit 1; }
	PATH="$(PY313_DIR):$$PATH" $(BIN)/sam build --template template.yaml

## make events: re-sign events/ (signatures expire after five minutes) for sam local invoke
events: venv
	$(BIN)/python -m kioku.playground.sample_events

clean:
	rm -rf .aws-sam build *.egg-info
