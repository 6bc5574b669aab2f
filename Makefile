# The tinytf book in two commands (see README.md):
#   make book   build the HTML book: English into _build/html, Chinese into _build/html/zh
#               (make en / make zh: one edition only)
#   make test   run every test: pytest over tests/ (build, browser, static checks) and nbval, which
#               re-executes every chapter notebook and compares outputs; then nbval once more under
#               another CPU kernel selection (what another machine computes)
# Both create .venv with python3.11 when it is missing and install requirements.lock (exact versions;
# torch pinned to the CPU wheel) and tinytf (pip install -e .). The install runs again only when
# requirements.lock or pyproject.toml change (a stamp keyed on their content).
#
# Maintenance:
#   make lock      re-resolve requirements.txt into requirements.lock (then: make execute, make test)
#   make execute   re-execute every chapter in place (deterministic; CHAPTERS=chapters/05_*.ipynb for some)

PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
DEPS_HASH := $(shell cat requirements.lock pyproject.toml 2>/dev/null | sha256sum | cut -c1-16)
STAMP := $(VENV)/.tinytf-installed-$(DEPS_HASH)
PIP := $(BIN)/python -m pip --disable-pip-version-check
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=600
# Another CPU rounds the last bits differently. These select torch's portable kernels and MKL's
# reproducible code path, so the second nbval run sees other last bits, as on another machine.
OTHER_KERNELS := ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE
XDIST ?= -n 2 --dist loadfile
PYTEST_ARGS ?=
CHAPTERS ?=

# The browser assets (plotly.js partial bundle, onnxruntime-web, axe-core) come from npm at the versions of package-lock.json.
NODE_STAMP := node_modules/.package-lock.json

.PHONY: book en zh test test-other-kernels env deps execute lock report clean

# pip's install (requirements.lock) and npm ci (package-lock.json) at the same time: both mostly wait on the network
deps:
	@$(MAKE) --no-print-directory -j2 $(STAMP) $(NODE_STAMP)

book: deps
	$(BIN)/python scripts/build_book.py

# one edition only (the same as TINYTF_BOOK_EDITIONS=en or zh with scripts/build_book.py)
en: deps
	TINYTF_BOOK_EDITIONS=en $(BIN)/python scripts/build_book.py

zh: deps
	TINYTF_BOOK_EDITIONS=zh $(BIN)/python scripts/build_book.py

# The book is built once, before pytest: every test that reads _build/html (and both workers) shares it.
# pytest-xdist runs the tests on both cores; --dist loadfile keeps each file (and so each chapter's kernel) on
# one worker (the per-page browser audit is split over two files so that both workers share it).
test: deps
	$(BIN)/python scripts/build_book.py --if-stale
	$(BIN)/python -m pytest $(XDIST) tests chapters $(NBVAL) $(PYTEST_ARGS)
	$(MAKE) --no-print-directory test-other-kernels

test-other-kernels: $(STAMP)
	@echo "nbval again under $(OTHER_KERNELS)"
	$(OTHER_KERNELS) $(BIN)/python -m pytest $(XDIST) chapters $(NBVAL) -p no:cacheprovider

env: $(STAMP)

execute: $(STAMP)
	$(BIN)/python scripts/execute_chapters.py $(CHAPTERS)

lock:
	PYTHON=$(PYTHON) bash scripts/lock.sh

$(NODE_STAMP): package.json package-lock.json
	@if command -v npm >/dev/null; then npm ci --no-audit --no-fund --loglevel=error; \
	else echo "npm not found: install Node.js (without npm ci the book falls back to the full plotly.js, its live panels cannot load onnxruntime-web, and the page-weight, accessibility and panel tests fail)"; fi

$(STAMP):
	@test -x $(BIN)/python || { echo "creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	$(PIP) install -q -r requirements.lock
	$(PIP) install -q --no-deps -e .
	@rm -f $(VENV)/.tinytf-installed-*
	@touch $@

# per-chapter execution time, nbval time, build time, page weights -> _build/book_report.md
report: deps
	$(BIN)/python scripts/book_report.py

clean:
	rm -rf _build
