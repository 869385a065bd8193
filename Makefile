# gpushare developer commands. Everything runs from the virtualenv built from requirements.txt.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STACK  ?= dev
CONFIG ?= Pulumi.$(STACK).yaml
# Optional: a Pulumi policy config JSON; default policies/config/<stack>.json when it exists.
POLICY_CONFIG ?=
POLICY_FLAG = $(if $(POLICY_CONFIG),--policy-config $(POLICY_CONFIG))

.PHONY: test lint plan check golden docs bench rules-test admission-test e2e engine simulate clean

$(VENV)/.installed: requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

test: $(VENV)/.installed ## run the whole suite (unit, golden, wiring, policies)
	$(PY) -m pytest -q

lint: $(VENV)/.installed ## ruff lint and format check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

plan: $(VENV)/.installed ## offline plan of STACK (or CONFIG=path) into build/<stack>/, checked by the policy pack
	$(PY) -m tools.plan --config $(CONFIG) --out build $(POLICY_FLAG)

check: $(VENV)/.installed ## evaluate the policy pack over PLAN=<plan.json>
	@test -n "$(PLAN)" || { echo "usage: make check PLAN=build/<stack>/plan.json [POLICY_CONFIG=file]" >&2; exit 2; }
	$(PY) -m tools.check --plan $(PLAN) $(POLICY_FLAG)

golden: $(VENV)/.installed ## rewrite tests/golden/<stack>/{manifests,helm}/ from the offline plan of dev, prod and existing
	$(PY) -m tools.golden

docs: $(VENV)/.installed ## rewrite the generated README tables (config schema, catalog, policies)
	$(PY) -m tools.docs

bench: $(VENV)/.installed ## print how long rendering, planning and checking take, and the rig's wall time per simulated hour against pods (DAYS=50,150,250 runs such days first)
	$(PY) -m tools.bench $(if $(DAYS),--days $(DAYS))

rules-test: $(VENV)/.installed ## promtool check/test the GPU alerts, parse every dashboard query (needs Go)
	$(PY) -m tools.rules_test

e2e: $(VENV)/.installed ## offline cluster: real kube-apiserver, Karpenter and KWOK run the stack, then the engine phase on a fresh rig (needs Go)
	$(PY) -m e2e
	$(PY) -m e2e --engine

engine: $(VENV)/.installed ## only the engine phase of make e2e: pulumi up, preview, policy pack, a change, destroy (needs Go; docs/engine.md)
	$(PY) -m e2e --engine

simulate: $(VENV)/.installed ## a workload mix, or a day (a trace, or a pod list with MAPPING) per stack variant (RUNS=n each, SPEEDS=s,s), through the offline cluster
	@test -n "$(WORKLOAD)" || { echo "usage: make simulate WORKLOAD=examples/workloads/inference-day.yaml [RUNS=3] [SPEEDS=20,60] | WORKLOAD=pods.csv MAPPING=mapping.yaml" >&2; exit 2; }
	$(PY) -m e2e --simulate $(WORKLOAD) $(if $(MAPPING),--mapping $(MAPPING)) $(if $(RUNS),--runs $(RUNS)) $(if $(SPEEDS),--speeds $(SPEEDS))

admission-test: $(VENV)/.installed ## run the team admission policies on sample pods with kube-apiserver's CEL code (needs Go)
	$(PY) -m tools.admission_test

clean:
	rm -rf build
