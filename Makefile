# privaudit developer commands. Two of them are all a new user needs:
#   make demo   - create .venv, install privaudit, run the demo (report in demo-report/)
#   make test   - create .venv, install privaudit with test tools, run the whole test suite
#
# TORCH_SPEC: what `pip` installs for the PyTorch parts (the demo's language models, torch
# targets). Empty (the default) installs the newest torch for your platform; CI sets
# TORCH_SPEC='torch==2.13.0' to use a CPU wheel.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_SPEC ?=
PYTEST_ARGS ?=
OUT ?= demo-report
# anonymeter pins numpy < 1.27: its parity test runs it in an environment of its own.
ANONYMETER_VENV ?= .venv-anonymeter
# SDV 2 pins pandas < 3: the SDV adapter's end-to-end test runs SDV in its own environment.
SDV_VENV ?= .venv-sdv
# flair brings a torch of its own (unpinned): the flair NER backend's end-to-end test runs it
# in its own environment, with the flair release the safe loader was written against.
FLAIR_VENV ?= .venv-flair
FLAIR_SPEC ?= flair==0.15.1
# jax-privacy brings jax and jaxlib (CPU wheels): the DP bounds' parity test runs its auditing
# module in an environment of its own, at the release the parity was measured against.
JAXPRIVACY_VENV ?= .venv-jaxprivacy
JAXPRIVACY_SPEC ?= jax-privacy==2.0.0

.PHONY: demo test lint bench clean venv

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(if $(TORCH_SPEC),$(BIN)/python -m pip install --quiet '$(TORCH_SPEC)')
	$(BIN)/python -m pip install --quiet -e '.[all,llm,dp]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

$(ANONYMETER_VENV)/.installed:
	$(PYTHON) -m venv $(ANONYMETER_VENV)
	$(ANONYMETER_VENV)/bin/python -m pip install --quiet anonymeter
	touch $@

$(SDV_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(SDV_VENV)
	$(if $(TORCH_SPEC),$(SDV_VENV)/bin/python -m pip install --quiet '$(TORCH_SPEC)')
	$(SDV_VENV)/bin/python -m pip install --quiet sdv
	$(SDV_VENV)/bin/python -m pip install --quiet -e .
	touch $@

$(FLAIR_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(FLAIR_VENV)
	$(if $(TORCH_SPEC),$(FLAIR_VENV)/bin/python -m pip install --quiet '$(TORCH_SPEC)')
	$(FLAIR_VENV)/bin/python -m pip install --quiet '$(FLAIR_SPEC)'
	$(FLAIR_VENV)/bin/python -m pip install --quiet -e '.[text]'
	touch $@

$(JAXPRIVACY_VENV)/.installed:
	$(PYTHON) -m venv $(JAXPRIVACY_VENV)
	$(JAXPRIVACY_VENV)/bin/python -m pip install --quiet jax jaxlib '$(JAXPRIVACY_SPEC)'
	touch $@

venv: $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/privaudit demo --out $(OUT)

# The time limits (pytest-timeout) are in pyproject.toml: a --timeout here would replace them.
# pytest caches its rewritten test modules as bytecode: a shell that sets
# PYTHONDONTWRITEBYTECODE makes every worker rewrite ~200 test files on every run (about
# 13 CPU-s per worker), so the suite runs with it unset.
test: $(VENV)/.installed-dev $(ANONYMETER_VENV)/.installed $(SDV_VENV)/.installed \
      $(FLAIR_VENV)/.installed $(JAXPRIVACY_VENV)/.installed
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n 2 $(PYTEST_ARGS)

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests benchmarks

bench: $(VENV)/.installed-dev
	for f in benchmarks/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) $(ANONYMETER_VENV) $(SDV_VENV) $(FLAIR_VENV) $(JAXPRIVACY_VENV) build dist src/*.egg-info .pytest_cache .ruff_cache $(OUT)
