# couchguard: `make demo` (the main job, offline) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: install demo test train bench-speed clean

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

test: install
	$(BIN)/python -m pytest -q

train: install
	$(BIN)/couchguard train

bench-speed: install
	$(BIN)/python benchmarks/speed.py

clean:
	rm -rf $(VENV) reports .pytest_cache
