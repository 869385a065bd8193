"""Checks over the rendered tenancy objects, for the policy pack to call (one finding string per problem).

They read only what a plan carries (plain object dicts), so the pack and the tests judge the same thing.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from gpushare import names
from gpushare.config import StackConfig
from gpushare.render.tenancy import GPU_POLICY_ANNOTATION, NODE_POLICY_ANNOTATION, per_gpu_limit_policy

POLICY_BINDINGS = {
    "MutatingAdmissionPolicy": "MutatingAdmissionPolicyBinding",
    "ValidatingAdmissionPolicy": "ValidatingAdmissionPolicyBinding",
}


def _only_namespace(selector: Any, namespace: str) -> bool:
    return selector == {"matchLabels": {names.NAMESPACE_NAME_LABEL: namespace}}


def admission_scope_problems(objects: list[dict[str, Any]]) -> list[str]:
    """Every team admission policy has a binding, and both match exactly the team's namespace."""
    problems = []
    bindings = {(o["kind"], o["spec"].get("policyName")): o for o in objects if o["kind"] in POLICY_BINDINGS.values()}
    for policy in (o for o in objects if o["kind"] in POLICY_BINDINGS):
        name = policy["metadata"]["name"]
        team = policy["metadata"].get("labels", {}).get(names.TEAM_LABEL)
        if team is None:
            continue
        if not _only_namespace((policy["spec"].get("matchConstraints") or {}).get("namespaceSelector"), team):
            problems.append(f"{policy['kind']} {name}: matchConstraints must select only namespace {team}")
        binding = bindings.get((POLICY_BINDINGS[policy["kind"]], name))
        if binding is None:
            problems.append(f"{policy['kind']} {name}: no {POLICY_BINDINGS[policy['kind']]} names it")
        elif not _only_namespace(binding["spec"].get("matchResources", {}).get("namespaceSelector"), team):
            problems.append(f"{binding['kind']} {name}: matchResources must select only namespace {team}")
    return problems


def scheduler_policy_problems(objects: list[dict[str, Any]]) -> list[str]:
    """Every team namespace that records a scheduler policy has mutating policies that set exactly it."""
    problems = []
    expressions: dict[Any, set[Any]] = defaultdict(set)  # team -> what its policies set, read once for all teams
    for o in objects:
        if o["kind"] == "MutatingAdmissionPolicy":
            for m in o["spec"].get("mutations", []):
                team = o["metadata"].get("labels", {}).get(names.TEAM_LABEL)
                expressions[team].add((m.get("applyConfiguration") or {}).get("expression"))
    for namespace in (o for o in objects if o["kind"] == "Namespace"):
        annotations = namespace["metadata"].get("annotations", {})
        team = namespace["metadata"]["name"]
        for recorded, hami_key in (
            (NODE_POLICY_ANNOTATION, names.HAMI_NODE_POLICY_ANNOTATION),
            (GPU_POLICY_ANNOTATION, names.HAMI_GPU_POLICY_ANNOTATION),
        ):
            if recorded not in annotations:
                continue
            wanted = f"'{hami_key}': '{annotations[recorded]}'"
            if not any(wanted in (expression or "") for expression in expressions.get(team, ())):
                problems.append(
                    f"Namespace {team}: scheduler policy {annotations[recorded]} is not applied to its pods "
                    f"(no MutatingAdmissionPolicy for namespace {team} sets {hami_key})"
                )
    return problems


def per_gpu_limit_problems(config: StackConfig, objects: list[dict[str, Any]]) -> list[str]:
    """Every team with a HAMi pool has its per-GPU limit policy, bound, refusing exactly above one GPU."""
    problems = []
    present = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    for team in config.teams:
        for wanted in per_gpu_limit_policy(config, team):
            found = present.get((wanted["kind"], wanted["metadata"]["name"]))
            if found is None:
                problems.append(f"team {team.name}: no {wanted['kind']} {wanted['metadata']['name']}")
            elif found["spec"] != wanted["spec"]:
                problems.append(
                    f"{wanted['kind']} {wanted['metadata']['name']}: differs from the per-GPU limits of pools "
                    f"{', '.join(team.pools)}"
                )
    return problems
