# Sift: `make run` starts the bot on embedded defaults, `make test` runs the whole suite.
# Both install whatever is missing first (virtualenv, packages, the Weaviate binary).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.sift-installed
EXTRAS ?= local,eval,dev,voyage
FIND_LINKS ?= $(or $(PIP_FIND_LINKS),/opt/wheels)

.PHONY: install run test lint typecheck bench clean help

help:
	@echo "make run      install what is missing, then start 'sift serve' on embedded defaults"
	@echo "make test     install what is missing, then run the full test suite"
	@echo "make install  only the install step (.venv, packages, Weaviate binary)"
	@echo "make lint     ruff + mypy"

$(BIN)/uv:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip uv

$(STAMP): pyproject.toml | $(BIN)/uv
	@# torch is the largest dependency: take a CPU-only build from local find-links when this
	@# machine has one; otherwise PyPI's default build comes in with the packages below.
	-@[ -d "$(FIND_LINKS)" ] && $(BIN)/uv pip install --python $(BIN)/python --quiet \
	    --no-index --find-links "$(FIND_LINKS)" torch 2>/dev/null \
	  && echo "torch: CPU build from $(FIND_LINKS)" || echo "torch: from the package index"
	$(BIN)/uv pip install --python $(BIN)/python -e ".[$(EXTRAS)]"
	touch $(STAMP)

install: $(STAMP)
	$(BIN)/sift weaviate install

run: install
	$(BIN)/sift serve

test: install
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check bot rag sync storage tests bench
	$(BIN)/mypy

bench: install
	@cat bench/README.md

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
