# MTR-Suite: `make demo` runs the spine on the bundled corpus; `make test` runs the import contracts,
# the strict docs build and the tests.
PYTHON ?= python3.11
VENV   ?= .venv
PY      = $(VENV)/bin/python
PIP     = $(VENV)/bin/pip
STAMP   = $(VENV)/.installed-stamp
export HF_HUB_OFFLINE = 1
export TRANSFORMERS_OFFLINE = 1
export PREFECT_SERVER_ANALYTICS_ENABLED = false
export TOKENIZERS_PARALLELISM = false
export NO_MKDOCS_2_WARNING = 1

.PHONY: install demo test test-slow test-llm bench clean serve docs lint

$(PY):
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found; install Python 3.11 or run 'make PYTHON=/path/to/python3.11 ...'"; exit 1; }
	$(PYTHON) -m venv $(VENV)

# torch first (exact pin: the CPU wheel), then the project with its pinned dependencies.
$(STAMP): $(PY) pyproject.toml
	$(PIP) install --quiet "torch==2.13.0"
	$(PIP) install --quiet -e ".[dev]"
	@touch $(STAMP)

install: $(STAMP)

demo: install
	$(VENV)/bin/mtr demo

# the import contracts of ARCHITECTURE.md (.importlinter)
lint: install
	$(VENV)/bin/lint-imports

# the documentation site into site/ (gitignored); --strict: a broken link or a missing page fails
docs: install
	$(VENV)/bin/mkdocs build --strict

test: install lint docs
	PREFECT_HOME=$$(mktemp -d) $(VENV)/bin/pytest -q

test-slow: install
	PREFECT_HOME=$$(mktemp -d) $(VENV)/bin/pytest -q -m slow

# only the tests against a real OpenAI-compatible server (llama.cpp + Gemma 3 270M); `make test` runs them too
test-llm: install
	PREFECT_HOME=$$(mktemp -d) $(VENV)/bin/pytest -q -m llm_server

bench: install
	$(PY) benchmarks/embedding.py && $(PY) benchmarks/clustering.py --sizes 10000

clean:
	rm -rf mtr-runs .pytest_cache site

serve: install
	$(VENV)/bin/mtr serve
