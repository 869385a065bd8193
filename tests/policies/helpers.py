"""Build a stack view from a plan, break one field, and see what the pack says."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from policies.gpushare_policies.registry import RULES, PolicyConfig, Violation, evaluate
from policies.gpushare_policies.stack import StackView, from_plan
from tests.conftest import PLAN_DATE

Resources = list[dict[str, Any]]


def resources_of(plan: dict[str, Any]) -> Resources:
    return copy.deepcopy(plan["resources"])


def find(resources: Resources, kind: str, name: str) -> dict[str, Any]:
    """The inputs of the resource whose type ends with `kind` and whose object or release name is `name`."""
    for resource in resources:
        inputs = resource["inputs"]
        object_name = inputs.get("metadata", {}).get("name") if "metadata" in inputs else inputs.get("name")
        if resource["type"].endswith(f":{kind}") and object_name == name:
            return inputs
    raise KeyError(f"{kind} {name}")


def entry(resources: Resources, kind: str, name: str) -> dict[str, Any]:
    """The whole plan entry (urn, dependencies...) of a resource."""
    inputs = find(resources, kind, name)
    return next(r for r in resources if r["inputs"] is inputs)


def drop(resources: Resources, kind: str, name: str) -> None:
    resources.remove(entry(resources, kind, name))


def violations(resources: Resources, policy: str, config: dict[str, Any] | None = None) -> list[Violation]:
    return [
        v for v in evaluate(from_plan(resources, PLAN_DATE), PolicyConfig.parse(config or {})) if v.policy == policy
    ]


def messages(resources: Resources, policy: str, config: dict[str, Any] | None = None) -> list[str]:
    return [v.message for v in violations(resources, policy, config)]


def messages_by_rule(resources: Resources) -> dict[str, list[str]]:
    """Every rule's messages (in the pack's order) from one evaluation: what `messages` says rule by rule, without
    evaluating the whole pack once per rule."""
    found: dict[str, list[str]] = {rule.name: [] for rule in RULES}
    for violation in evaluate(from_plan(resources, PLAN_DATE), PolicyConfig.parse({})):
        found.setdefault(violation.policy, []).append(violation.message)
    return found


def broken(plan: dict[str, Any], change: Callable[[Resources], None]) -> Resources:
    resources = resources_of(plan)
    change(resources)
    return resources


def view_of(objects: list[dict[str, Any]]) -> StackView:
    """A stack view of rendered Kubernetes objects, typed as the plan types them, to run a rule's check on."""

    def token(obj: dict[str, Any]) -> str:
        api = obj["apiVersion"] if "/" in obj["apiVersion"] else f"core/{obj['apiVersion']}"
        return f"kubernetes:{api}:{obj['kind']}"

    return from_plan(
        [
            {"urn": f"urn:{i}", "type": token(o), "name": o["metadata"]["name"], "inputs": o}
            for i, o in enumerate(objects)
        ],
        PLAN_DATE,
    )
