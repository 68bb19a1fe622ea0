# Every target creates .venv itself on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-all bench lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/dponline demo

test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/pytest -q -m "not slow"
	$(BIN)/dponline --help > /dev/null

test-all: $(STAMP)
	$(BIN)/pytest -q

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_continual.py
	$(BIN)/python benchmarks/bench_replicas.py
	$(BIN)/python benchmarks/bench_agarwal_singh.py
	$(BIN)/python benchmarks/bench_glm_bandit.py
	$(BIN)/python benchmarks/bench_private_bandit.py
	$(BIN)/python benchmarks/bench_ctrl.py
	$(BIN)/python benchmarks/bench_ctrl_regret.py --quick
	$(BIN)/python benchmarks/bench_side_by_side.py --quick

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
