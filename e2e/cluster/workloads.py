"""What the suites and the simulator run and read on the offline cluster: the `Context` handle on the running
cluster, test Deployments asking HAMi resources, and reads of pods, NodeClaims and events.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from e2e.cluster.api import Api
from e2e.cluster.changes import Changes
from e2e.cluster.errors import RigError
from e2e.cluster.hami_installed import HamiInstalled
from e2e.cluster.hami_values import HamiValues
from e2e.cluster.invariants import HAMI_DEVICES, Invariants
from e2e.cluster.kubectl import Kubectl
from e2e.cluster.node_agent import NodeAgent
from e2e.cluster.rig import Rig
from e2e.cluster.stack import KWOK_NODE_CLASS, Plan, for_rig, variant_plan
from e2e.cluster.tenants import STACK, Tenant
from gpushare import names
from gpushare.catalog import Catalog

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
MONITORING_GROUP = "monitoring.coreos.com"


@dataclass
class Context:
    """The running cluster as one scenario, or the simulator, sees it: the plan the rig runs (`stack`), the tenant
    whose teams and pools it owns (the stack's own when none), and what its waits cost (`waited`, seconds by what was
    waited on)."""

    log_dir: Path
    api: Api
    kubectl: Kubectl
    catalog: Catalog
    plans: dict[str, Plan]
    agent: NodeAgent
    # What the stack's HAMi values say HAMi manages (resource names, sharing profile).
    hami: HamiValues
    # When the rig started (UTC): the rig's scheduled disruption budgets are computed from it.
    started: datetime
    stack: str
    tenants: tuple[Tenant, ...] = ()
    tenant: Tenant = STACK
    changes: Changes | None = None
    waited: dict[str, float] = field(default_factory=dict)
    # The run's invariant checker (e2e.cluster.invariants), sampling the cluster while scenarios run.
    invariants: Invariants | None = None
    # The rig's processes, for the fault scenarios that kill and restart them.
    rig: Rig | None = None
    # Set once Karpenter runs: restart it with some of the stack's feature gates changed (none: the stack's own).
    restart_karpenter: Callable[[dict[str, str]], None] = lambda _changed: None
    # HAMi's scheduler as Helm renders the running stack's chart (its ports, Service), once the cluster started.
    hami_chart: HamiInstalled | None = None

    @property
    def plan(self) -> Plan:
        return self.plans[self.stack]

    @property
    def rendered_hami(self) -> HamiInstalled:
        if self.hami_chart is None:
            raise RigError(
                "HAMi's scheduler is not running yet: it starts with the cluster, or once the engine installed the "
                "stack"
            )
        return self.hami_chart

    def team(self, name: str) -> str:
        """The tenant's copy of the stack's team `name` (the team itself for the stack's own)."""
        return self.tenant.team(name) if self.tenant.name else name

    def pool(self, name: str) -> str:
        return self.tenant.pool(name) if self.tenant.name else name

    def owns(self, pool: str) -> bool:
        """Whether NodeClaims of `pool` are this context's to count and wait for."""
        if self.tenant.name:
            return self.tenant.owns(pool)
        return not any(tenant.owns(pool) for tenant in self.tenants)

    def for_tenant(self, tenant: Tenant) -> Context:
        return replace(self, tenant=tenant, waited={})


def namespaces_first(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(objects, key=lambda obj: obj["kind"] != "Namespace")


def install_running_stack(ctx: Context, left_out: Callable[[dict[str, Any]], bool] = lambda _obj: False) -> None:
    """Apply the stack as the rig runs it (NodePools on the KWOKNodeClass), but the objects `left_out` names."""
    applied = [
        obj for obj in ctx.plan.objects if not obj["apiVersion"].startswith(MONITORING_GROUP) and not left_out(obj)
    ]
    objects = namespaces_first([for_rig(obj, ctx.started) for obj in applied])
    nodepools = [obj["metadata"]["name"] for obj in objects if obj["kind"] == "NodePool"]
    if len(set(nodepools)) != len(nodepools):
        raise RigError(f"two NodePools share a short rig name ({', '.join(sorted(nodepools))}): rename a pool")
    ctx.kubectl.apply([KWOK_NODE_CLASS, *objects])


def variant(ctx: Context, name: str, edit: Callable[[dict[str, Any]], None]) -> Plan:
    """The running plan with `edit` made to a copy of its stack file, planned by the real program (under a name of
    the scenario's own, so concurrent scenarios' variants do not meet)."""
    return variant_plan(ctx.stack, f"{ctx.stack}-{ctx.tenant.name or 'own'}-{name}", ctx.log_dir.parent, edit, ctx.plan)


def team_pools(ctx: Context, team: str) -> list[str]:
    """The pools the team (a name in the running plan) lists."""
    return ctx.plan.namespace(team)["metadata"]["annotations"][names.TEAM_POOLS_ANNOTATION].split(",")


def team_pool(ctx: Context, team: str) -> str:
    return team_pools(ctx, team)[0]


def rig_pool(ctx: Context, pool: str) -> dict[str, Any]:
    """The NodePool named `pool` as the rig runs it."""
    [nodepool] = [p for p in ctx.plan.of_kind("NodePool") if p["metadata"]["name"] == pool]
    return for_rig(nodepool, ctx.started)


def requirement(spec: dict[str, Any], key: str) -> list[str]:
    return next(r["values"] for r in spec["requirements"] if r["key"] == key)


def gpu_deployment(
    ctx: Context,
    name: str,
    namespace: str,
    pool: str,
    replicas: int,
    vgpu: dict[str, int],
    cpu: str = "500m",
    shared: bool = False,
    gpu: bool = True,
) -> dict[str, Any]:
    """A Deployment of pause containers asking HAMi resources (names from the HAMi release's values), with
    `shared` one time-sliced GPU replica instead, or without `gpu` no GPU at all (but the pool's toleration)."""
    if not gpu:
        limits = {}
    elif shared:
        limits = {names.GPU_SHARED: "1"}
    else:
        limits = {
            ctx.hami.resource_name: str(vgpu.get("gpu", 1)),
            ctx.hami.resource_cores: str(vgpu["cores"]),
            ctx.hami.resource_mem: str(vgpu["mem_mib"]),
        }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "nodeSelector": {names.POOL_LABEL: pool},
                    "tolerations": [
                        {"key": names.GPU_TAINT["key"], "operator": "Exists", "effect": names.GPU_TAINT["effect"]}
                    ],
                    "terminationGracePeriodSeconds": 0,
                    "containers": [
                        {
                            "name": "server",
                            "image": PAUSE_IMAGE,
                            "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}, "limits": limits},
                        }
                    ],
                },
            },
        },
    }


DEFAULT_SCHEDULER = "default-scheduler"
# HAMi's device plugin's bind phase on a pod (pkg/util/types.go); what its scheduler writes (HAMI_NODE,
# HAMI_DEVICES) is e2e.cluster.invariants'.
HAMI_BIND_PHASE = "hami.io/bind-phase"


def gpus_of(pod: dict[str, Any]) -> list[str]:
    """The GPU UUIDs HAMi allocated to the pod's containers (`UUID,type,mem,cores:` per device, `;` per
    container)."""
    text = pod["metadata"].get("annotations", {}).get(HAMI_DEVICES, "")
    return [device.split(",")[0] for container in text.split(";") for device in container.split(":") if device]


def app_pods(ctx: Context, namespace: str, app: str) -> list[dict[str, Any]]:
    return ctx.api.items(f"/api/v1/namespaces/{namespace}/pods?labelSelector=app%3D{app}")


def running(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [pod for pod in pods if pod.get("status", {}).get("phase") == "Running"]


def bound(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Running pods whose HAMi allocation completed (KWOK may report a pod Running before its device plugin's
    Allocate has run; a kubelet would not start it)."""
    return [p for p in running(pods) if p["metadata"].get("annotations", {}).get(HAMI_BIND_PHASE) == "success"]


def nodeclaims(ctx: Context) -> list[dict[str, Any]]:
    """The NodeClaims of the context's own pools (concurrent scenarios' claims are theirs)."""
    return [
        claim
        for claim in ctx.api.items("/apis/karpenter.sh/v1/nodeclaims")
        if ctx.owns(claim["metadata"].get("labels", {}).get(names.NODEPOOL_LABEL, ""))
    ]


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    """The object's condition of that type, {} when it has none (an object just created may have no status yet, or
    `conditions: null`)."""
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def initialized(claim: dict[str, Any]) -> bool:
    """Whether a NodeClaim is Initialized: its node registered every resource Karpenter expects, GPUs included."""
    return condition(claim, "Initialized").get("status") == "True"


def events(ctx: Context, namespace: str, about: str = "") -> list[str]:
    """`reason: message` of the namespace's events, only those about objects named `about...` when given (earlier
    scenarios' events stay around)."""
    return [
        f"{e.get('reason')}: {e.get('message')}"
        for e in ctx.api.items(f"/api/v1/namespaces/{namespace}/events")
        if str(e.get("involvedObject", {}).get("name", "")).startswith(about)
    ]


def event_count(ctx: Context, namespace: str, about: str, reason: str, saying: str = "") -> int:
    """How often the namespace's events with `reason` (and a message `saying` that) about objects named `about...`
    happened (a repeated event is one object with a count)."""
    return sum(
        int(e.get("count") or e.get("series", {}).get("count") or 1)
        for e in ctx.api.items(f"/api/v1/namespaces/{namespace}/events")
        if e.get("reason") == reason
        and saying in str(e.get("message", ""))
        and str(e.get("involvedObject", {}).get("name", "")).startswith(about)
    )


def nodes_by_type(ctx: Context) -> dict[str, int]:
    return dict(Counter(claim["metadata"]["labels"]["node.kubernetes.io/instance-type"] for claim in nodeclaims(ctx)))


def usd_per_hour(ctx: Context, by_type: dict[str, int]) -> float:
    return round(sum(ctx.catalog.instance_type(t).on_demand_usd_per_hour * n for t, n in by_type.items()), 3)


def admitted(ctx: Context, pod: dict[str, Any]) -> dict[str, Any]:
    """The pod as the API server would store it, after every admission plugin (server-side dry run)."""
    return json.loads(ctx.kubectl.run(*ctx.kubectl.APPLY, "--dry-run=server", "-o", "json", objects=[pod]))


def get_pod(ctx: Context, namespace: str, name: str) -> dict[str, Any]:
    return ctx.api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
