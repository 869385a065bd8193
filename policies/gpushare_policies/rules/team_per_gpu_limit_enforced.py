"""Every team on HAMi pools has a bound ValidatingAdmissionPolicy refusing per-container HAMi requests above the
largest GPU of its pools."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from gpushare import names
from gpushare.capacity import container_limits
from gpushare.catalog import load_catalog

from ..admission import ADMISSION_API, binding_without_deny
from ..hami import Hami, expected_capacity, is_hami_pool
from ..kube import Pool
from ..nvidia import is_timeslice_pool
from ..pools import pools_of_team
from ..rule import Finding, Rule, finding, finding_about
from ..selectors import names_allowed, selects_only_namespace
from ..stack import NAMESPACE, Resource, StackView, sorted_by_name

POLICY = f"{ADMISSION_API}:ValidatingAdmissionPolicy"
BINDING = f"{ADMISSION_API}:ValidatingAdmissionPolicyBinding"


def _denying_by_namespace(view: StackView) -> dict[Any, list[Resource]]:
    """Namespace -> the policies a Deny binding applies to pods of exactly that namespace (indexed once), however
    the binding's namespaceSelector is written."""
    policies = {policy.object_name: policy for policy in view.of_type(POLICY)}
    namespaces = {namespace.object_name: namespace for namespace in view.of_type(NAMESPACE)}
    found: dict[Any, list[Resource]] = defaultdict(list)
    for binding in view.of_type(BINDING):
        actions = binding.get("spec", "validationActions")
        if not isinstance(actions, list) or "Deny" not in actions:
            continue
        policy = policies.get(str(binding.get("spec", "policyName")))
        if policy is None:
            continue
        selector = binding.get("spec", "matchResources", "namespaceSelector")
        allowed = names_allowed(selector)
        namespace = namespaces.get(next(iter(allowed))) if allowed is not None and len(allowed) == 1 else None
        if namespace is not None and selects_only_namespace(
            selector, namespace.object_name, namespace.get("metadata", "labels")
        ):
            found[namespace.object_name].append(policy)
    return found


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _bounds(policies: list[Resource], resource: str) -> list[tuple[Resource, str]]:
    """(policy, expression) of every validation that compares `resource` with a quantity: one that reads it from a
    container (`...['<resource>']`) and calls quantity(), not one that only lists it among others."""
    return [
        (policy, expression)
        for policy in policies
        for validation in _listed(policy.get("spec", "validations"))
        if isinstance(validation, dict)
        and f"['{resource}']" in (expression := str(validation.get("expression")))
        and "quantity(" in expression
    ]


def _exclusive_gpu_counts(pools: list[Pool]) -> list[int]:
    """GPUs per node of the catalog's GPU types in whole-GPU pools (a team's pod may ask that many)."""
    catalog = load_catalog()
    return [
        catalog.instance_type(t).gpu_count
        for p in pools
        for t in p.instance_types or ()
        if t in catalog.instance_type_names
    ]


def _why(resource: str, pools_shown: str) -> str:
    if resource == names.GPU_SHARED:
        return "one time-sliced replica per container"
    if resource == names.GPU:
        return "each vGPU of a container takes a GPU of its own: the most GPUs a node of the team's pools has"
    return f"the largest GPU of pools {pools_shown}"


def _harm(resource: str) -> str:
    if resource == names.GPU_SHARED:
        return "the NVIDIA device plugin refuses such a pod only at allocation, after a node was launched for it"
    return "such a pod makes Karpenter launch a node it can never run on"


def check_per_gpu_limit(view: StackView, _config: None) -> Iterator[Finding]:
    hami = Hami.of(view)
    for namespace in sorted_by_name(view.of_type(NAMESPACE)):
        if names.TEAM_LABEL not in (namespace.get("metadata", "labels") or {}):
            continue
        team_pools = pools_of_team(view, namespace)
        hami_pools = [p for p in team_pools if is_hami_pool(view, p)] if hami is not None else []
        capacities = [expected_capacity(hami, t) for p in hami_pools for t in p.instance_types or ()] if hami else []
        limits = container_limits(
            (c for c in capacities if not isinstance(c, str)),
            _exclusive_gpu_counts([p for p in team_pools if p not in hami_pools and not is_timeslice_pool(p)]),
            any(is_timeslice_pool(p) for p in team_pools),
        )
        policies = view.memo("denying-policies", lambda: _denying_by_namespace(view)).get(namespace.object_name, [])
        pools_shown = ", ".join(p.name for p in hami_pools)
        for resource, limit in limits.items():
            bounds = _bounds(policies, resource)
            name = f"gpushare-{namespace.object_name}-per-gpu-limit"
            weak = binding_without_deny(view, name) if not bounds else None
            if weak is not None:
                yield finding(
                    weak,
                    "spec.validationActions",
                    weak.get("spec", "validationActions"),
                    f"without Deny the policy only reports a container asking more than {limit} {resource} "
                    f"({_why(resource, pools_shown)}): {_harm(resource)}",
                    'set it to ["Deny"]',
                )
            elif not bounds:
                yield finding_about(
                    namespace,
                    f"no ValidatingAdmissionPolicy bound with Deny to this team namespace refuses a container asking "
                    f"more than {limit} {resource} ({_why(resource, pools_shown)}): {_harm(resource)}",
                    f"keep gpushare's per-GPU limit policy gpushare-{namespace.object_name}-per-gpu-limit and its "
                    "binding",
                )
            for policy, expression in bounds:
                if f"quantity('{limit}')" not in expression:
                    yield finding_about(
                        policy,
                        f"its {resource} bound is not {limit} ({_why(resource, pools_shown)}): a lower bound refuses "
                        "pods that fit, a higher one lets through pods no node can run",
                        f"compare {resource} with quantity('{limit}')",
                    )


RULE = Rule(
    name="team-per-gpu-limit-enforced",
    order=31,
    description=f"Every team on HAMi pools has a ValidatingAdmissionPolicy, bound with Deny to its namespace, that "
    f"refuses containers asking more {names.GPU_MEMORY}, {names.GPU_CORES} or {names.GPU_MEMORY_PERCENTAGE} than "
    f"the largest GPU of the team's HAMi pools, more {names.GPU} than the team's largest node has GPUs, or more "
    f"than one {names.GPU_SHARED} on time-sliced pools.",
    why="Overlays advertise a node's summed GPU memory but a vGPU lives on one GPU: a pod asking more than one GPU "
    "holds makes Karpenter launch nodes it never runs on, consolidate them and launch them again.",
    remediation="Keep the per-GPU limit policy gpushare renders for each team (gpushare-<team>-per-gpu-limit).",
    enforcement="mandatory",
    severity="high",
    check=check_per_gpu_limit,
)
