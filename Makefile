# couchguard: `make demo` (the main job, offline) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: install demo lint test train eval bench-speed load profile export-onnx clean

install: $(VENV)/.installed

# torch first, pinned: 2.13.0 resolves to the local CPU wheel, anything looser pulls a multi-GB CUDA build.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: install
	$(BIN)/couchguard bench moore2025 --policy mental-health --json reports/moore2025.json --report reports/moore2025

# ruff (lint, then format as a check: run `ruff format` to apply it) and mypy, as configured in pyproject.toml
lint: install
	$(BIN)/ruff check guard classifiers policies tests
	$(BIN)/ruff format --check guard classifiers policies tests
	$(BIN)/mypy

# as root, .ci/postgres.sh starts (or reuses) a loopback PostgreSQL for the audit tests; otherwise they skip
# .ci/browser.sh installs Debian's chromium for the playground's browser tests (as root; otherwise they skip)
test: install lint
	.ci/browser.sh
	COUCHGUARD_TEST_POSTGRES_URL="$${COUCHGUARD_TEST_POSTGRES_URL:-$$(.ci/postgres.sh)}" $(BIN)/python -m pytest -q

# heads and cards from the corpora, then the shipped thresholds chosen on the dev sets (docs/evaluation.md)
train: install
	$(BIN)/couchguard train
	$(BIN)/couchguard eval --choose-thresholds --write

# signals and policy on text the corpora's writers did not write: test sets first, then dev, then the authored held-out
eval: install
	$(BIN)/couchguard eval --json reports/eval.json

bench-speed: install
	$(BIN)/python benchmarks/speed.py

# 50, 100 and 200 concurrent checked streams against `couchguard serve` and a scripted upstream, both on loopback:
# 200/429 counts, time to first checked token, proxy memory (reports/load.json, reports/load.md)
load: install
	$(BIN)/python benchmarks/load.py --concurrency 50 100 200

# where `couchguard check` spends its time, on 200 Moore conversations: reports/profile/profile.txt; and where the
# proxy's request path does (event loop, scoring and audit threads, one request at a time and 64 at once):
# reports/profile/proxy.txt
profile: install
	$(BIN)/python benchmarks/profile_check.py --out reports/profile
	$(BIN)/python benchmarks/profile_check.py --proxy --out reports/profile

# the shipped encoder as ONNX graphs (fp32, int8) in classifiers/encoder_onnx/; rerun whenever the encoder changes
export-onnx: install
	$(BIN)/python -m pip install --quiet -e '.[export]'
	$(BIN)/python -m classifiers.onnx_export

clean:
	rm -rf $(VENV) reports .pytest_cache
