# gpushare developer commands. Everything runs from the virtualenv built from requirements.txt.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STACK  ?= dev
CONFIG ?= Pulumi.$(STACK).yaml
# Optional: a Pulumi policy config JSON; default policies/config/<stack>.json when it exists.
POLICY_CONFIG ?=
POLICY_FLAG = $(if $(POLICY_CONFIG),--policy-config $(POLICY_CONFIG))

.PHONY: help test unit lint plan check diff golden docs bench rules-test admission-test e2e chaos engine simulate try pack clean
# A bare `make` lists the targets.
.DEFAULT_GOAL := help

help: ## list the targets with what each does
	@grep -E '^[a-z][a-z0-9-]*:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z0-9-]+):[^#]*## (.*)/\1\t\2/' | \
		awk -F '\t' '{ printf "  make %-16s %s\n", $$1, $$2 }'

$(VENV)/.installed: requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

test: $(VENV)/.installed ## run the whole suite (unit, golden, wiring, policies), on every core
	$(PY) -m pytest -q -n auto --dist loadfile

unit: $(VENV)/.installed ## the quick loop: the whole suite but the tests that run the whole program (marker plan)
	$(PY) -m pytest -q -n auto -m "not plan"

lint: $(VENV)/.installed ## ruff lint and format check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

plan: $(VENV)/.installed ## offline plan of STACK (or CONFIG=path) into build/<stack>/, checked by the policy pack
	$(PY) -m tools.plan --config $(CONFIG) --out build $(POLICY_FLAG)

check: $(VENV)/.installed ## evaluate the policy pack over PLAN=<plan.json>
	@test -n "$(PLAN)" || { echo "usage: make check PLAN=build/<stack>/plan.json [POLICY_CONFIG=file]" >&2; exit 2; }
	$(PY) -m tools.check --plan $(PLAN) $(POLICY_FLAG)

diff: $(VENV)/.installed ## what a change to stack file A changes in the rendered stack and its cost, against B (default: A's last plan under build/)
	@test -n "$(A)" || { echo "usage: make diff A=<stack file after the change> [B=<stack file before it>]" >&2; exit 2; }
	$(PY) -m tools.diff --a $(A) $(if $(B),--b $(B)) --out build

golden: $(VENV)/.installed ## rewrite tests/golden/<stack>/{manifests,helm}/ from the offline plan of dev, prod and existing
	$(PY) -m tools.golden

docs: $(VENV)/.installed ## rewrite the generated tables of docs/*.md and e2e/README.md (config schema, catalog, policies, scenarios)
	$(PY) -m tools.docs

bench: $(VENV)/.installed ## print how long rendering, planning, checking and the exact packing take, and the rig's wall time per simulated hour against pods (DAYS=50,150,250 runs such days first)
	$(PY) -m tools.bench $(if $(DAYS),--days $(DAYS))

rules-test: $(VENV)/.installed ## promtool check/test the GPU alerts, parse every dashboard query (needs Go)
	$(PY) -m tools.rules_check

e2e: $(VENV)/.installed ## offline cluster: real kube-apiserver, Karpenter and KWOK run the stack; beside it the engine phase on a rig of its own (needs Go)
	$(PY) -m e2e --with-engine

chaos: $(VENV)/.installed ## offline cluster faults: HAMi, Karpenter, a node's device plugins and the API server killed, a GPU node lost, a burst; invariants checked throughout (needs Go; docs/faults.md)
	$(PY) -m e2e --chaos

engine: $(VENV)/.installed ## only the engine phase of make e2e: pulumi up, preview, policy pack, a change, destroy (needs Go; docs/engine.md)
	$(PY) -m e2e --engine

simulate: $(VENV)/.installed ## a workload mix, or a day (a trace, or a pod list with MAPPING) per stack variant (RUNS=n each, SPEEDS=s,s), through the offline cluster
	@test -n "$(WORKLOAD)" || { echo "usage: make simulate WORKLOAD=examples/workloads/inference-day.yaml [RUNS=3] [SPEEDS=20,60] | WORKLOAD=pods.csv MAPPING=mapping.yaml" >&2; exit 2; }
	$(PY) -m e2e --simulate $(WORKLOAD) $(if $(MAPPING),--mapping $(MAPPING)) $(if $(RUNS),--runs $(RUNS)) $(if $(SPEEDS),--speeds $(SPEEDS))

try: $(VENV)/.installed ## a team's own manifests (PODS=file or folder, TEAM=team, STACK=dev|prod) placed on the offline cluster: what happened to each workload, and why
	@test -n "$(PODS)" -a -n "$(TEAM)" || { echo "usage: make try PODS=examples/try TEAM=ml-research [STACK=dev|prod]" >&2; exit 2; }
	$(PY) -m e2e --try $(PODS) --team $(TEAM) --stack $(STACK)

pack: $(VENV)/.installed ## the cheapest nodes for a fixed mix, or a replayed pod list at a moment (MAPPING=, AT=HH:MM), proven by CP-SAT, no cluster (STACK= packs a mix on another stack's pools)
	@test -n "$(WORKLOAD)" || { echo "usage: make pack WORKLOAD=examples/workloads/inference-mix.yaml [STACK=dev|prod] | WORKLOAD=pods.csv MAPPING=mapping.yaml AT=14:00" >&2; exit 2; }
	$(PY) -m tools.pack --workload $(WORKLOAD) $(if $(filter command line environment,$(origin STACK)),--stack $(STACK)) $(if $(MAPPING),--mapping $(MAPPING)) $(if $(AT),--at $(AT))

admission-test: $(VENV)/.installed ## run the team admission policies on sample pods with kube-apiserver's CEL code (needs Go)
	$(PY) -m tools.admission_check

clean: ## remove build/ (the offline plans)
	rm -rf build
