# gpushare developer commands. Everything runs from the virtualenv built from requirements.txt.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STACK  ?= dev
CONFIG ?= Pulumi.$(STACK).yaml

.PHONY: test lint plan golden bench clean

$(VENV)/.installed: requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

test: $(VENV)/.installed ## run the whole suite (unit, golden, wiring, policies)
	$(PY) -m pytest -q

lint: $(VENV)/.installed ## ruff lint and format check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

plan: $(VENV)/.installed ## offline plan of STACK (or CONFIG=path) into build/<stack>/
	$(PY) -m tools.plan --config $(CONFIG) --out build

golden: $(VENV)/.installed ## rewrite tests/golden/ from the dev and prod stack files
	$(PY) -m tools.golden

bench: $(VENV)/.installed ## print how long rendering, planning and checking take
	$(PY) -m tools.bench

clean:
	rm -rf build
