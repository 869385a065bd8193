"""Per team: Namespace, ResourceQuota on HAMi resources, LimitRange, and the admission policies that apply the
team's scheduler policy, priority and spot restriction to its pods and refuse requests no single GPU can hold.

Admission facts (Kubernetes 1.36): MutatingAdmissionPolicy is admissionregistration.k8s.io/v1 (KEP-3962,
kubernetes.io/docs/reference/kubernetes-api/admissionregistration/mutating-admission-policy-v1/). The Priority
plugin runs before MutatingAdmissionPolicy in kube-apiserver's plugin order (pkg/kubeapiserver/options/
plugins.go AllOrderedPlugins: Priority sits above the policy and webhook plugins, which "must go at the end"),
so a policy that only set priorityClassName would leave the pod at the priority already resolved (0); the
policy therefore sets priorityClassName, priority and preemptionPolicy together, as the class defines them.
"""

from __future__ import annotations

from typing import Any

from gpushare import compat, names
from gpushare.capacity import container_limits, pool_container_limits, pool_plans, team_quota_hard
from gpushare.config import CONTAINER_DEFAULT_CPU, CONTAINER_DEFAULT_MEMORY, Priority, StackConfig, TeamConfig
from gpushare.tiers import TIERS

ADMISSION_API = "admissionregistration.k8s.io/v1"
# Resources a HAMi pod asks for (the names HAMi's chart values resourceName/resourceMem/... register).
HAMI_RESOURCES = (names.GPU, names.GPU_MEMORY, names.GPU_CORES, names.GPU_MEMORY_PERCENTAGE)
# Every GPU resource a pod can ask: HAMi's, and the time-sliced replicas the NVIDIA plugin registers.
GPU_RESOURCES = (*HAMI_RESOURCES, names.GPU_SHARED)
# Tier -> (value, preemptionPolicy), from gpushare/tiers.py (what each tier promises, which the pack checks).
# batch never preempts: it is the tier others evict, and a batch job waits for capacity (Karpenter still
# launches nodes for it) instead of evicting pods of workloads outside gpushare's tiers.
PRIORITIES: dict[str, tuple[int, str]] = {tier.name: (tier.value, tier.preemption_policy) for tier in TIERS}


def _any_container(predicate: str) -> str:
    """CEL: `predicate` (over `c`) holds for some container or init container. The two lists have different
    types in the API server's pod schema, so they cannot be concatenated (its type check refuses `+`)."""
    return (
        f"(object.spec.containers.exists(c, {predicate}) || "
        f"(has(object.spec.initContainers) && object.spec.initContainers.exists(c, {predicate})))"
    )


def _every_container(predicate: str) -> str:
    """CEL: `predicate` (over `c`) holds for every container and init container."""
    return (
        f"(object.spec.containers.all(c, {predicate}) && "
        f"(!has(object.spec.initContainers) || object.spec.initContainers.all(c, {predicate})))"
    )


def priority_class_name(tier: Priority) -> str:
    return f"{names.PRIORITY_CLASS_PREFIX}{tier}"


def priority_classes() -> list[dict[str, Any]]:
    """One PriorityClass per tier; never the global default, so pods outside team namespaces keep theirs."""
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": priority_class_name(tier)},
            "value": value,
            "globalDefault": False,
            "preemptionPolicy": preemption,
            "description": f"gpushare {tier} tier, applied to team pods by admission",
        }
        for tier, (value, preemption) in PRIORITIES.items()
    ]


def team_objects(config: StackConfig, team: TeamConfig) -> list[dict[str, Any]]:
    """Namespace, ResourceQuota, LimitRange, then the team's admission policies, in apply order."""
    labels = {
        names.TEAM_LABEL: team.name,
        # Privileged pods on a shared node escape HAMi's isolation, which lives in the container.
        names.POD_SECURITY_ENFORCE_LABEL: "baseline",
        names.POD_SECURITY_WARN_LABEL: "restricted",
    }
    if not config.uses_hami(team):
        labels[names.HAMI_WEBHOOK_IGNORE[0]] = names.HAMI_WEBHOOK_IGNORE[1]
    namespace: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": team.name, "labels": labels},
    }
    annotations = {names.TEAM_POOLS_ANNOTATION: ",".join(team.pools), names.TEAM_PRIORITY_ANNOTATION: team.priority}
    if team.scheduler_policy is not None:
        annotations[names.NODE_POLICY_ANNOTATION] = team.scheduler_policy.node
        annotations[names.GPU_POLICY_ANNOTATION] = team.scheduler_policy.gpu
    namespace["metadata"]["annotations"] = dict(sorted(annotations.items()))
    owned = {"name": f"{team.name}-gpu", "namespace": team.name, "labels": {names.TEAM_LABEL: team.name}}
    return [
        namespace,
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": owned, "spec": {"hard": quota_hard(config, team)}},
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {**owned, "name": f"{team.name}-defaults"},
            # Default requests only: a `max` on an extended resource would become every container's default
            # limit, making each pod in the namespace ask for a GPU.
            "spec": {
                "limits": [
                    {
                        "type": "Container",
                        "defaultRequest": {"cpu": CONTAINER_DEFAULT_CPU, "memory": CONTAINER_DEFAULT_MEMORY},
                    }
                ]
            },
        },
        *mutating_policies(config, team),
        *per_gpu_limit_policy(config, team),
        *isolation_policy(config, team),
    ]


def quota_hard(config: StackConfig, team: TeamConfig) -> dict[str, str]:
    """The team's ResourceQuota: the `requests.` keys Kubernetes enforces at pod creation, from what containers
    state; and HAMi's own `limits.` memory and core keys, which its scheduler (2.10+, pkg/device/quota.go) charges
    with what it hands out, so the memory budget also holds for percentage, whole-GPU and cores-only requests.
    GPU memory is counted in units of memoryFactor MiB on both sides (HAMi multiplies its limit by the factor).
    The keys and amounts are the domain's (capacity.team_quota_hard), which the config checks judge too."""
    return {key: str(amount) for key, amount in team_quota_hard(config, team).items()}


def namespace_selector(team: TeamConfig) -> dict[str, Any]:
    """Exactly the team's namespace (the API server labels every namespace with its own name)."""
    return {"matchLabels": {names.NAMESPACE_NAME_LABEL: team.name}}


def _pod_creates(team: TeamConfig) -> dict[str, Any]:
    return {
        "namespaceSelector": namespace_selector(team),
        "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}],
    }


def asks_any(resources: tuple[str, ...]) -> str:
    """CEL: some container requests or limits one of `resources`."""
    listed = "[" + ", ".join(f"'{r}'" for r in resources) + "]"
    return _any_container(
        f"has(c.resources) && "
        f"((has(c.resources.limits) && c.resources.limits.exists(r, r in {listed})) || "
        f"(has(c.resources.requests) && c.resources.requests.exists(r, r in {listed})))"
    )


def _lacks_annotation(key: str) -> str:
    return f"!has(object.metadata.annotations) || !('{key}' in object.metadata.annotations)"


def _apply(expression: str) -> dict[str, Any]:
    """An ApplyConfiguration mutation: merged like server-side apply, so it may set scalars and granular maps."""
    return {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}


def _mutating_policy(
    team: TeamConfig, purpose: str, conditions: dict[str, str], mutation: dict[str, Any]
) -> list[dict[str, Any]]:
    """A policy that applies `mutation` to matching pods, and its binding.

    Fails open (failurePolicy Ignore): a broken policy must not stop a team's pods. No reinvocation: nothing
    the policy sets is something a later plugin would make it change.
    """
    name = f"gpushare-{team.name}-{purpose}"
    return [
        {
            "apiVersion": ADMISSION_API,
            "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": name, "labels": {names.TEAM_LABEL: team.name}},
            "spec": {
                "failurePolicy": "Ignore",
                "reinvocationPolicy": "Never",
                "matchConstraints": _pod_creates(team),
                "matchConditions": [{"name": key, "expression": value} for key, value in conditions.items()],
                "mutations": [mutation],
            },
        },
        {
            "apiVersion": ADMISSION_API,
            "kind": "MutatingAdmissionPolicyBinding",
            "metadata": {"name": name, "labels": {names.TEAM_LABEL: team.name}},
            "spec": {"policyName": name, "matchResources": {"namespaceSelector": namespace_selector(team)}},
        },
    ]


def _validating_policy(team: TeamConfig, purpose: str, validations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A policy refusing the team's pod creations that fail any of `validations`, and its Deny binding.

    Fails closed (failurePolicy Fail): a check that cannot run must not let the pod past the limit it guards."""
    name = f"gpushare-{team.name}-{purpose}"
    return [
        {
            "apiVersion": ADMISSION_API,
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name, "labels": {names.TEAM_LABEL: team.name}},
            "spec": {"failurePolicy": "Fail", "matchConstraints": _pod_creates(team), "validations": validations},
        },
        {
            "apiVersion": ADMISSION_API,
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name, "labels": {names.TEAM_LABEL: team.name}},
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": namespace_selector(team)},
            },
        },
    ]


def mutating_policies(config: StackConfig, team: TeamConfig) -> list[dict[str, Any]]:
    """Scheduler policy (GPU pods without their own annotation), HAMi's scheduler (HAMi pods the default one would
    get), priority (GPU pods without their own class) and spot (GPU pods of spot-only teams), each a policy +
    binding; none where the cluster lacks the GA API.

    Only GPU pods get a tier: they alone reach the tainted GPU nodes, where tiers are meant to compete; a
    team's CPU pods raised above 0 could preempt controllers on the system nodes."""
    if not compat.has_mutating_admission_policy(config.cluster.kubernetes_version):
        return []
    objects: list[dict[str, Any]] = []
    if team.scheduler_policy is not None:
        for purpose, key, value in (
            ("node-scheduler-policy", names.HAMI_NODE_POLICY_ANNOTATION, team.scheduler_policy.node),
            ("gpu-scheduler-policy", names.HAMI_GPU_POLICY_ANNOTATION, team.scheduler_policy.gpu),
        ):
            objects += _mutating_policy(
                team,
                purpose,
                {"asks-hami": asks_any(HAMI_RESOURCES), "no-own-policy": _lacks_annotation(key)},
                _apply(f"Object{{metadata: Object.metadata{{annotations: {{'{key}': '{value}'}}}}}}"),
            )
    if config.uses_hami(team):
        # HAMi's webhook fails open (render/hami.py says why), and a GPU pod it missed while HAMi's scheduler was
        # down went to the default scheduler, which bound it to a HAMi node without a GPU: its kubelet then
        # refuses it (HAMi's device plugin allocates only pods HAMi placed) and a Job counts the failure. Routed
        # here, in the API server, such a pod waits for HAMi's scheduler instead (the offline cluster's
        # hami-scheduler-killed; docs/faults.md). The webhook still runs on it, as for a pod naming HAMi itself.
        key, value = names.HAMI_WEBHOOK_IGNORE
        objects += _mutating_policy(
            team,
            "hami-scheduler",
            {
                "asks-hami": asks_any(HAMI_RESOURCES),
                "default-scheduler": "!has(object.spec.schedulerName) || object.spec.schedulerName == "
                f"'{names.DEFAULT_SCHEDULER_NAME}'",
                # What the webhook's object selector skips, this skips too (a pod that opts out of HAMi).
                "not-opted-out": f"!has(object.metadata.labels) || !('{key}' in object.metadata.labels) || "
                f"object.metadata.labels['{key}'] != '{value}'",
            },
            _apply(f"Object{{spec: Object.spec{{schedulerName: '{names.HAMI_SCHEDULER_NAME}'}}}}"),
        )
    value, preemption = PRIORITIES[team.priority]
    objects += _mutating_policy(
        team,
        "priority",
        {
            "asks-gpu": asks_any(GPU_RESOURCES),
            "no-own-class": "!has(object.spec.priorityClassName) || object.spec.priorityClassName == ''",
        },
        _apply(
            f"Object{{spec: Object.spec{{priorityClassName: '{priority_class_name(team.priority)}', "
            f"priority: {value}, preemptionPolicy: '{preemption}'}}}}"
        ),
    )
    objects += gpu_toleration_policy(team)
    objects += pool_selector_policy(config, team)
    if team.spot_only:
        # A JSON patch: the Pod schema marks nodeSelector an atomic map, which an ApplyConfiguration may not
        # change (the API server refuses it); a node affinity term would replace the pod's own affinity.
        key = _json_pointer(names.CAPACITY_TYPE_LABEL)
        spot = names.CAPACITY_TYPE_SPOT
        objects += _mutating_policy(
            team,
            "spot",
            {"asks-gpu": asks_any(GPU_RESOURCES)},
            {
                "patchType": "JSONPatch",
                "jsonPatch": {
                    "expression": "has(object.spec.nodeSelector) ? "
                    f"[JSONPatch{{op: 'add', path: '/spec/nodeSelector/{key}', value: '{spot}'}}] : "
                    f"[JSONPatch{{op: 'add', path: '/spec/nodeSelector', value: {{'{names.CAPACITY_TYPE_LABEL}': "
                    f"'{spot}'}}}}]"
                },
            },
        )
    return objects


def _json_pointer(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def tolerates_gpu_taint() -> str:
    """CEL: some toleration of the pod tolerates the GPU pools' taint (its key, or every key; its effect or all; its
    value, or Exists), as the scheduler matches a toleration to a taint."""
    key, value, effect = (names.GPU_TAINT[k] for k in ("key", "value", "effect"))
    return (
        "has(object.spec.tolerations) && object.spec.tolerations.exists(t, "
        f"((has(t.key) && t.key == '{key}') || ((!has(t.key) || t.key == '') && has(t.operator) && "
        "t.operator == 'Exists')) && "
        f"(!has(t.effect) || t.effect == '' || t.effect == '{effect}') && "
        f"((has(t.operator) && t.operator == 'Exists') || (has(t.value) && t.value == '{value}')))"
    )


def gpu_toleration_policy(team: TeamConfig) -> list[dict[str, Any]]:
    """A team's GPU pod that does not tolerate the GPU pools' taint gets the toleration, as Kubernetes'
    ExtendedResourceToleration admission plugin adds one for a taint named like a requested extended resource
    (EKS lets no one enable admission plugins). Without it the pod stays Pending: no node it may use exists, so
    Karpenter launches none. Time-sliced pods ask nvidia.com/gpu.shared, whose nodes carry the same taint."""
    toleration = f"{{'key': '{names.GPU_TAINT['key']}', 'operator': 'Exists', 'effect': '{names.GPU_TAINT['effect']}'}}"
    return _mutating_policy(
        team,
        "gpu-toleration",
        {"asks-gpu": asks_any(GPU_RESOURCES), "no-gpu-toleration": f"!({tolerates_gpu_taint()})"},
        {
            "patchType": "JSONPatch",
            "jsonPatch": {
                "expression": "has(object.spec.tolerations) ? "
                f"[JSONPatch{{op: 'add', path: '/spec/tolerations/-', value: {toleration}}}] : "
                f"[JSONPatch{{op: 'add', path: '/spec/tolerations', value: [{toleration}]}}]"
            },
        },
    )


def _asks_none(resource: str) -> str:
    return f"!{asks_any((resource,))}"


def pool_holds(limits: dict[str, int]) -> str:
    """CEL: every container asks only GPU resources the pool registers, each within what one container may ask
    there (capacity.pool_container_limits)."""
    return " && ".join(
        _within(resource, limits[resource]) if resource in limits else _asks_none(resource)
        for resource in GPU_RESOURCES
    )


def _names_no_pool() -> str:
    """CEL: neither the pod's nodeSelector nor a required node affinity term names a pool label."""
    keys = "[" + ", ".join(f"'{k}'" for k in POOL_SELECTOR_KEYS) + "]"
    required = "object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    return (
        f"!(has(object.spec.nodeSelector) && {keys}.exists(k, k in object.spec.nodeSelector)) && "
        f"!(has(object.spec.affinity) && has(object.spec.affinity.nodeAffinity) && has({required}) && "
        f"{required}.nodeSelectorTerms.exists(t, has(t.matchExpressions) && "
        f"t.matchExpressions.exists(e, e.key in {keys})))"
    )


def pool_selector_policy(config: StackConfig, team: TeamConfig) -> list[dict[str, Any]]:
    """A team's GPU pod that selects no pool gets `nodeSelector gpushare.io/pool: <pool>` when exactly one of the
    team's pools holds what it asks (by kind of GPU resource and per-container size); with several, or none, it
    gets nothing and the isolation policy refuses it, naming the selector to add. A JSON patch: the Pod schema
    marks nodeSelector an atomic map, which an ApplyConfiguration may not change."""
    plans = pool_plans(config)
    holds = {pool: pool_holds(pool_container_limits(plans[pool])) for pool in team.pools}
    key = _json_pointer(names.POOL_LABEL)
    expression = "[]"
    for pool in reversed(team.pools):
        alone = " && ".join([f"({holds[pool]})", *(f"!({holds[other]})" for other in team.pools if other != pool)])
        patch = (
            f"(has(object.spec.nodeSelector) ? [JSONPatch{{op: 'add', path: '/spec/nodeSelector/{key}', "
            f"value: '{pool}'}}] : [JSONPatch{{op: 'add', path: '/spec/nodeSelector', "
            f"value: {{'{names.POOL_LABEL}': '{pool}'}}}}])"
        )
        expression = f"({alone}) ? {patch} : {expression}"
    return _mutating_policy(
        team,
        "pool-selector",
        {"asks-gpu": asks_any(GPU_RESOURCES), "no-pool-selector": _names_no_pool()},
        {"patchType": "JSONPatch", "jsonPatch": {"expression": expression}},
    )


def _within(resource: str, limit: int) -> str:
    """CEL: no container requests or limits more than `limit` of `resource`."""
    fits = [
        f"(!has(c.resources.{side}) || !('{resource}' in c.resources.{side}) || "
        f"quantity(c.resources.{side}['{resource}']).compareTo(quantity('{limit}')) <= 0)"
        for side in ("limits", "requests")
    ]
    return _every_container(f"!has(c.resources) || ({' && '.join(fits)})")


def per_gpu_limit_policy(config: StackConfig, team: TeamConfig) -> list[dict[str, Any]]:
    """A ValidatingAdmissionPolicy + binding refusing pods whose per-container HAMi request no GPU (or, for
    nvidia.com/gpu, no node) of the team's pools can hold: Karpenter's summed view of a node would still launch
    one, which HAMi never places the pod on, again and again. And containers asking more than one time-sliced
    replica (the NVIDIA plugin refuses those only at allocation, after the pod was scheduled and a node launched
    for it)."""
    plans = pool_plans(config)
    team_plans = [plans[name] for name in team.pools]
    limits = container_limits(
        (c for plan in team_plans for c in plan.capacities),
        (n.resources[names.GPU] for plan in team_plans if plan.sharing == names.SHARING_EXCLUSIVE for n in plan.nodes),
        any(plan.sharing == names.SHARING_TIMESLICE for plan in team_plans),
    )
    hami_pools = ", ".join(plan.name for plan in team_plans if plan.sharing == names.SHARING_HAMI)
    reasons = {
        resource: f"one vGPU lives on one GPU and the largest GPU of pools {hami_pools} holds {limit}"
        for resource, limit in limits.items()
    }
    if names.GPU in limits:
        reasons[names.GPU] = (
            f"HAMi gives each vGPU of a container a GPU of its own and no node of pools "
            f"{', '.join(plan.name for plan in team_plans if plan.sharing != names.SHARING_TIMESLICE)} has more "
            f"than {limits[names.GPU]} GPU{'s' if limits[names.GPU] > 1 else ''}"
        )
    factor = config.hami.profile.memory_factor
    if names.GPU_MEMORY in limits and factor > 1:
        reasons[names.GPU_MEMORY] += f" units of {factor} MiB (memoryFactor {factor}: pods request gpumem in them)"
    if names.GPU_SHARED in limits:
        reasons[names.GPU_SHARED] = "replicas of one GPU add no compute and the NVIDIA device plugin refuses more"
    if not limits:
        return []
    return _validating_policy(
        team,
        "per-gpu-limit",
        [
            {
                "expression": _within(resource, limit),
                "message": f"{resource} per container must be at most {limit}: {reasons[resource]}",
                "reason": "Invalid",
            }
            for resource, limit in limits.items()
        ],
    )


# Node labels a pod can select a GPU pool by: gpushare's own and the one Karpenter puts on every node it launches.
POOL_SELECTOR_KEYS = (names.POOL_LABEL, names.NODEPOOL_LABEL)


def _pool_selectors_within(pools: tuple[str, ...]) -> str:
    """CEL: the pod's nodeSelector and required node affinity name no pool outside `pools` by a pool label.

    An affinity term may only use `In` on those keys: NotIn, Exists and DoesNotExist reach pools the term does not
    name. Preferred affinity is left alone: it cannot place a pod where its required terms do not let it."""
    keys = "[" + ", ".join(f"'{k}'" for k in POOL_SELECTOR_KEYS) + "]"
    allowed = "[" + ", ".join(f"'{p}'" for p in pools) + "]"
    selector = (
        f"!has(object.spec.nodeSelector) || {keys}.all(k, !(k in object.spec.nodeSelector) || "
        f"object.spec.nodeSelector[k] in {allowed})"
    )
    required = "object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    affinity = (
        "!has(object.spec.affinity) || !has(object.spec.affinity.nodeAffinity) || "
        f"!has({required}) || {required}.nodeSelectorTerms.all(t, !has(t.matchExpressions) || "
        f"t.matchExpressions.all(e, !(e.key in {keys}) || "
        f"(e.operator == 'In' && has(e.values) && e.values.all(v, v in {allowed}))))"
    )
    return f"({selector}) && ({affinity})"


def _selects_a_pool(pools: tuple[str, ...]) -> str:
    """CEL: a pod asking GPUs names its pool, by nodeSelector or by an `In` on a pool label in every required
    affinity term (with `_pool_selectors_within`, one of `pools`). Without one Karpenter may launch, and
    kube-scheduler use, a node of any pool whose taint the pod tolerates: another team's."""
    keys = "[" + ", ".join(f"'{k}'" for k in POOL_SELECTOR_KEYS) + "]"
    required = "object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    by_selector = f"(has(object.spec.nodeSelector) && {keys}.exists(k, k in object.spec.nodeSelector))"
    by_affinity = (
        f"(has(object.spec.affinity) && has(object.spec.affinity.nodeAffinity) && has({required}) && "
        f"{required}.nodeSelectorTerms.all(t, has(t.matchExpressions) && "
        f"t.matchExpressions.exists(e, e.key in {keys} && e.operator == 'In')))"
    )
    return f"!{asks_any(GPU_RESOURCES)} || {by_selector} || {by_affinity}"


def isolation_policy(config: StackConfig, team: TeamConfig) -> list[dict[str, Any]]:
    """A ValidatingAdmissionPolicy + binding keeping a team's pods within what the stack gave the team: no priority
    above its tier, no pool outside its own.

    Priority: the Priority plugin resolves `spec.priority` from the pod's class before any validating admission,
    so comparing the number covers every class, gpushare's and system-node-critical alike; without it a team picks
    a higher class and preempts other teams. Pools: quotas count resources, not pools (one vGPU quota covers every
    HAMi pool), so without it a team selects another team's pool and fills it; a GPU pod must select a pool, or
    Karpenter may put it on any pool whose taint it tolerates. Where the cluster has no MutatingAdmissionPolicy
    (before 1.36) nothing adds the GPU pools' toleration, so a GPU pod without it is refused here, naming it,
    instead of staying Pending with no node it may use."""
    value, _ = PRIORITIES[team.priority]
    pools = ", ".join(team.pools)
    toleration = []
    if not compat.has_mutating_admission_policy(config.cluster.kubernetes_version):
        taint = names.GPU_TAINT
        toleration.append(
            {
                "expression": f"!{asks_any(GPU_RESOURCES)} || ({tolerates_gpu_taint()})",
                "message": f"a pod asking GPUs must tolerate the GPU pools' taint {taint['key']}={taint['value']}:"
                f"{taint['effect']}: tolerations: [{{key: {taint['key']}, operator: Exists, effect: "
                f"{taint['effect']}}}]",
                "reason": "Forbidden",
            }
        )
    return _validating_policy(
        team,
        "isolation",
        [
            *toleration,
            {
                "expression": f"!has(object.spec.priority) || object.spec.priority <= {value}",
                "message": f"priority must be at most {value}, the {team.priority} tier of team "
                f"{team.name}: use priorityClassName {priority_class_name(team.priority)} or a lower class, "
                "or none",
                "reason": "Forbidden",
            },
            {
                "expression": _pool_selectors_within(team.pools),
                "message": f"{' and '.join(POOL_SELECTOR_KEYS)} may select only pools of team {team.name} "
                f"({pools}), in nodeSelector or with operator In in required node affinity",
                "reason": "Forbidden",
            },
            {
                "expression": _selects_a_pool(team.pools),
                "message": f"a pod asking GPUs must select its pool, one of team {team.name}'s ({pools}): "
                f"nodeSelector {names.POOL_LABEL}: <pool>",
                "reason": "Forbidden",
            },
        ],
    )
