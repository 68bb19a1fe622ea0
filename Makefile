# Every target creates .venv itself on a fresh machine; `make demo` installs only what the demo
# needs (dponline with matplotlib), `make test` the development tools as well.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_STAMP := $(VENV)/.installed-demo
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: demo test test-all bench lint docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[report]'
	touch $(DEMO_STAMP)

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(DEV_STAMP) $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/dponline demo

test: $(DEV_STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/pytest -q -m "not slow" -n auto
	$(BIN)/dponline --help > /dev/null
	@# strict counts the warnings it logs (--quiet would hide them): the log is shown on failure
	@$(BIN)/mkdocs build --strict > mkdocs.log 2>&1 || (cat mkdocs.log; rm -f mkdocs.log; exit 1)
	@rm -f mkdocs.log; echo "docs build: no warnings"

docs: $(DEV_STAMP)
	$(BIN)/mkdocs build --strict

test-all: $(DEV_STAMP)
	$(BIN)/pytest -q -n auto

bench: $(DEV_STAMP)
	$(BIN)/python benchmarks/bench_continual.py
	$(BIN)/python benchmarks/bench_replicas.py
	$(BIN)/python benchmarks/bench_agarwal_singh.py
	$(BIN)/python benchmarks/bench_glm_bandit.py
	$(BIN)/python benchmarks/bench_private_bandit.py
	$(BIN)/python benchmarks/bench_ctrl.py
	$(BIN)/python benchmarks/bench_ctrl_regret.py --quick
	$(BIN)/python benchmarks/bench_side_by_side.py --quick
	$(BIN)/python benchmarks/bench_exp2.py --quick
	$(BIN)/python benchmarks/bench_private_bandits.py --json bench-results/private_bandits.json
	$(BIN)/python benchmarks/bench_anytime.py --json bench-results/anytime.json
	$(BIN)/python benchmarks/bench_design_horizon.py --json bench-results/design_horizon.json
	$(BIN)/python benchmarks/bench_person_bandits.py --json bench-results/person_bandits.json
	$(BIN)/python benchmarks/bench_rare_clicks.py --json bench-results/rare_clicks.json
	$(BIN)/python benchmarks/bench_long_horizons.py --json bench-results/long_horizons.json
	$(BIN)/python benchmarks/bench_speed.py
	$(BIN)/python benchmarks/bench_frank_wolfe.py
	$(BIN)/python benchmarks/bench_glm_digits.py
	$(BIN)/dponline reproduce han2024 --fresh --out bench-results/han2024

lint: $(DEV_STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis site
