# privtune developer commands. Every target creates its own virtual environment,
# installing the CPU build of torch 2.13.0 first (an unpinned torch would pull
# gigabytes of CUDA packages).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.privtune-installed

export OMP_NUM_THREADS := 1
export MKL_NUM_THREADS := 1

.PHONY: setup test test-slow test-fast demo lint docs docs-serve clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

## Set up, then run the whole test suite in two tiers, one pytest-xdist worker per logical CPU: tier 1 is every
## test not marked slow (unit, property, docstring and the quick statistical tests), tier 2 the tests marked slow
## (the long DP audits with their broken twins, the documented commands). Both run and both must pass; tier 2 starts
## only once tier 1 has passed.
test: setup
	@echo "== tier 1 of 2: tests not marked slow =="
	$(BIN)/python -m pytest -q -n logical --dist worksteal -m "not slow"
	@echo "== tier 2 of 2: tests marked slow (long DP audits, documented commands) =="
	$(BIN)/python -m pytest -q -n logical --dist worksteal -m slow

## Set up, then run tier 2 of `make test` only (the tests marked slow).
test-slow: setup
	$(BIN)/python -m pytest -q -n logical --dist worksteal -m slow

## Set up, then run the main job: privtune demo (RBF SVM on bundled breast-cancer data, sensitive validation split).
demo: setup
	$(BIN)/privtune demo

## Skip the tests marked slow or statistical (quick local loop).
test-fast: setup
	$(BIN)/python -m pytest -q -n logical -m "not slow and not statistical"

lint: setup
	$(BIN)/ruff check privtune tests

## Set up, then build the documentation site into site/ (mkdocs.yml; --strict: any warning, such as a broken link,
## an unresolved reference or a docstring griffe cannot parse, fails the build). Open site/index.html.
docs: setup
	$(BIN)/mkdocs build --strict --site-dir site

## Set up, then serve the documentation site at http://127.0.0.1:8000, rebuilt on every change.
docs-serve: setup
	$(BIN)/mkdocs serve

clean:
	rm -rf $(VENV) build dist site *.egg-info .pytest_cache .hypothesis
