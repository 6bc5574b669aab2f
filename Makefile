# The tinytf book in two commands (see README.md):
#   make book   build the HTML book into _build/html
#   make test   run every test: pytest over tests/ (build, browser, static checks)
#               and nbval, which re-executes every chapter notebook and compares outputs
# Both create .venv with python3.11 when it is missing and install requirements.txt
# (torch pinned to the CPU wheel) and tinytf (pip install -e .). The install runs again
# only when requirements.txt or pyproject.toml change (a stamp keyed on their content).

PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
DEPS_HASH := $(shell cat requirements.txt pyproject.toml 2>/dev/null | sha256sum | cut -c1-16)
STAMP := $(VENV)/.tinytf-installed-$(DEPS_HASH)
PIP := $(BIN)/python -m pip --disable-pip-version-check
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=300
PYTEST_ARGS ?=

.PHONY: book test env report clean

book: $(STAMP)
	$(BIN)/python scripts/build_book.py

test: $(STAMP)
	$(BIN)/python -m pytest tests chapters $(NBVAL) $(PYTEST_ARGS)

env: $(STAMP)

$(STAMP):
	@test -x $(BIN)/python || { echo "creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	$(PIP) install -q -r requirements.txt
	$(PIP) install -q -e .
	@rm -f $(VENV)/.tinytf-installed-*
	@touch $@

# per-chapter execution time, nbval time, build time, page weights -> _build/book_report.md
report: $(STAMP)
	$(BIN)/python scripts/book_report.py

clean:
	rm -rf _build
