# Thin targets; the scripts they call hold the logic.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
export VENV_BIN := $(abspath $(BIN))

.PHONY: venv tools runtimes run test fuzz bench bench-load soak drills lint clean

# The static embedding model's table, made once from the installed transformer (docs/similar.md);
# then the int8 all-mpnet-base-v2 file, made once with PyTorch in a throwaway environment of its
# own (services/similar/build_mpnet.py: about 3 minutes on two cores and 3 GB of temporary disk;
# nothing when its manifest still names the files). MPNET_TORCH_PIP_ARGS: pip arguments for
# that torch.
venv: $(VENV)/.installed
	@$(BIN)/python -m services.similar.embedding
	@$(BIN)/python -m services.similar.build_mpnet

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV) || { [ "$$(id -u)" = 0 ] && apt-get update -qq \
		&& apt-get install -y -qq python3-venv && $(PYTHON) -m venv $(VENV); }
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

# The OpenAPI linter (npm, pinned) and Debian's chromium for the /docs browser test.
tools:
	bash scripts/test_tools.sh

run: venv
	VENV_BIN=$(abspath $(BIN)) bash scripts/run.sh

# The receiver snippets of docs/webhooks.md run in the tests: node and go from Debian.
runtimes:
	@command -v node >/dev/null 2>&1 && command -v go >/dev/null 2>&1 || \
	{ [ "$$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y -qq --no-install-recommends \
	nodejs golang-go >/dev/null; } || echo "make: install nodejs and golang-go for the snippet tests"

test: venv tools runtimes
	bash scripts/k8s_check.sh --no-tests
	VENV_BIN=$(abspath $(BIN)) bash scripts/test_env.sh $(BIN)/python -m pytest

# Schema fuzzing alone, for longer than `make test` does: FUZZ_BUDGET_S seconds (default 900),
# FUZZ_SEED (default: a new one each run; Schemathesis prints it).
FUZZ_BUDGET_S ?= 900
fuzz: venv
	FUZZ_BUDGET_S=$(FUZZ_BUDGET_S) FUZZ_SEED=$${FUZZ_SEED:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')} \
		VENV_BIN=$(abspath $(BIN)) bash scripts/test_env.sh $(BIN)/python -m pytest -s \
		tests/security/test_fuzz.py

bench: venv
	VENV_BIN=$(abspath $(BIN)) bash scripts/test_env.sh $(BIN)/python -m bench

# The realistic mix with Locust, 1 and 2 replicas (bench/load.py); the soak at 70% of capacity,
# SOAK_SECONDS long (default 600) (bench/soak.py).
bench-load: venv
	VENV_BIN=$(abspath $(BIN)) bash scripts/test_env.sh $(BIN)/python -m bench.load

SOAK_SECONDS ?= 600
soak: venv
	SOAK_SECONDS=$(SOAK_SECONDS) VENV_BIN=$(abspath $(BIN)) bash scripts/test_env.sh \
		$(BIN)/python -m bench.soak

# Fault drills on private PostgreSQL and RabbitMQ (bench/drills.py); the quick ones are in `make test`.
drills: venv
	VENV_BIN=$(abspath $(BIN)) bash scripts/test_env.sh $(BIN)/python -m bench.drills

# ruff's checks ([tool.ruff.lint]: pyflakes, import sorting, pyupgrade, bugbear; ruff is fetched
# on first use; `ruff check --fix` sorts and upgrades), the formatter's check ([tool.ruff.format];
# `ruff format services libs tests bench scripts` fixes what it finds), the import contracts of
# docs/architecture.md ([tool.importlinter]), then the type check of services and libs (mypy,
# pinned in the dev extras; pyproject.toml).
lint: venv
	$(BIN)/pip install --quiet ruff
	$(BIN)/ruff check services libs tests bench scripts
	$(BIN)/ruff format --check services libs tests bench scripts
	$(BIN)/lint-imports --no-logo
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .run
