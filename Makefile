# privtune developer commands. Every target creates its own virtual environment,
# installing the CPU build of torch 2.13.0 first (an unpinned torch would pull
# gigabytes of CUDA packages).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.privtune-installed

export OMP_NUM_THREADS := 1
export MKL_NUM_THREADS := 1

.PHONY: setup test test-fast demo lint clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

## Set up, then run the whole test suite (unit, property, statistical and DP-audit tests), one pytest-xdist
## worker per logical CPU (the DP audits are long and independent).
test: setup
	$(BIN)/python -m pytest -q -n logical --dist worksteal

## Set up, then run the main job: privtune demo (RBF SVM on bundled breast-cancer data, sensitive validation split).
demo: setup
	$(BIN)/privtune demo

## Skip the tests marked slow or statistical (quick local loop).
test-fast: setup
	$(BIN)/python -m pytest -q -n logical -m "not slow and not statistical"

lint: setup
	$(BIN)/ruff check privtune tests

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis
