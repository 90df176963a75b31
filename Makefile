# Thin targets; the scripts they call hold the logic.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
export VENV_BIN := $(abspath $(BIN))

.PHONY: venv run test bench lint clean runtimes

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV) || { [ "$$(id -u)" = 0 ] && apt-get update -qq \
		&& apt-get install -y -qq python3-venv && $(PYTHON) -m venv $(VENV); }
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

run: venv
	VENV_BIN=$(abspath $(BIN)) bash scripts/run.sh

# The receiver snippets of docs/webhooks.md run in the tests: node and go from Debian.
runtimes:
	@command -v node >/dev/null 2>&1 && command -v go >/dev/null 2>&1 || \
	{ [ "$$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y -qq --no-install-recommends \
	nodejs golang-go >/dev/null; } || echo "make: install nodejs and golang-go for the snippet tests"

test: venv runtimes
	bash scripts/k8s_check.sh --no-tests
	VENV_BIN=$(abspath $(BIN)) bash scripts/test_env.sh $(BIN)/python -m pytest

bench: venv
	VENV_BIN=$(abspath $(BIN)) bash scripts/test_env.sh $(BIN)/python -m bench

# Pyflakes-level checks (unused names, undefined names, imports); ruff is fetched on first use.
lint: venv
	$(BIN)/pip install --quiet ruff
	$(BIN)/ruff check --isolated --select F services libs tests bench scripts

clean:
	rm -rf $(VENV) .run
