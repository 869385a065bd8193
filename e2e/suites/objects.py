"""Objects and admission: the stack's objects accepted by the real API server, and the team admission policies."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from e2e.cluster.kubectl import KubectlError
from e2e.cluster.workloads import (
    MONITORING_GROUP,
    Context,
    admitted,
    gpu_deployment,
    namespaces_first,
    team_pool,
)
from e2e.suites.base import Result, Scenario, ScenarioFailure, wait
from gpushare import names

SEED_TEAM = "inference"


def objects_accepted(ctx: Context, stack: str) -> Result:
    """Every object of the stack, server-side applied with the real CRDs; a re-apply changes nothing."""
    plan = ctx.plans[stack]
    skipped = [obj for obj in plan.objects if obj["apiVersion"].startswith(MONITORING_GROUP)]
    objects = namespaces_first([obj for obj in plan.objects if obj not in skipped])
    try:
        ctx.kubectl.apply(objects)
        before = ctx.kubectl.versions(objects)
        ctx.kubectl.apply(objects)
        after = ctx.kubectl.versions(objects)
        warnings = _type_check_warnings(ctx, [obj for obj in objects if obj["kind"] == "ValidatingAdmissionPolicy"])
    except KubectlError as error:
        raise ScenarioFailure(f"API server refused an object of {stack}: {error}") from None
    finally:
        try:
            ctx.kubectl.delete(list(reversed(objects)))
        except KubectlError as error:
            raise ScenarioFailure(f"could not delete the {stack} objects again: {error}") from None
    changed = sorted(key for key in before if before[key] != after.get(key))
    if changed:
        raise ScenarioFailure(f"re-applying {stack} changed {', '.join(changed)}")
    # The type checker resolves no field of a container's ResourceList (`c.resources.limits` alone warns
    # "undefined field 'limits'" on this API server); evaluation does see them (scenario team-admission).
    unexplained = [w for w in warnings if not re.search(r"undefined field '(limits|requests)'", w)]
    if unexplained:
        raise ScenarioFailure(f"the API server's CEL type check warns: {'; '.join(unexplained)}")
    kinds = Counter(obj["kind"] for obj in objects)
    notes = []
    if skipped:
        notes.append(
            f"{len(skipped)} {MONITORING_GROUP} objects not applied: their CRDs come from the "
            "kube-prometheus-stack chart, which the rig does not install"
        )
    if warnings:
        notes.append(
            f"{len(warnings)} CEL type-check warnings on container resource maps, which the API server's "
            "type checker cannot resolve; evaluation is shown in team-admission"
        )
    return Result(
        f"objects-{stack}",
        True,
        f"{len(objects)} objects of {stack} accepted, re-apply changed 0",
        {"objects": len(objects), "kinds": dict(sorted(kinds.items()))},
        notes,
    )


def _type_check_warnings(ctx: Context, policies: list[dict[str, Any]]) -> list[str]:
    """The API server type-checks ValidatingAdmissionPolicy CEL against the pod schema after creation and
    records warnings in status; wait until every policy has been checked, then collect them."""
    if not policies:
        return []

    def checked() -> list[dict[str, Any]] | None:
        live = ctx.kubectl.get(policies)
        done = all("typeChecking" in item.get("status", {}) for item in live)
        return live if done else None

    wait(ctx, "the API server to type-check the admission policies", lambda: checked() is not None, 60, on="api")
    return [
        f"{item['metadata']['name']} {warning['fieldRef']}: {warning['warning']}"
        for item in checked() or []
        for warning in item["status"]["typeChecking"].get("expressionWarnings", [])
    ]


def team_admission(ctx: Context) -> Result:
    """The team's admission policies, evaluated by the API server on pods that ask HAMi resources."""
    team = ctx.team(SEED_TEAM)
    pool = team_pool(ctx, team)
    annotations = ctx.plan.namespace(team)["metadata"].get("annotations", {})
    expected = {
        "hami.io/node-scheduler-policy": annotations["gpushare.io/node-scheduler-policy"],
        "hami.io/gpu-scheduler-policy": annotations["gpushare.io/gpu-scheduler-policy"],
    }
    spec = gpu_deployment(ctx, "probe", team, pool, 1, {"cores": 50, "mem_mib": 1024})["spec"]["template"]["spec"]

    def pod(name: str, own: dict[str, str], mem_mib: int = 1024) -> dict[str, Any]:
        body = json.loads(json.dumps(spec))
        body["containers"][0]["resources"]["limits"][ctx.hami.resource_mem] = str(mem_mib)
        metadata = {"name": name, "namespace": team, "annotations": own}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": body}

    plain = admitted(ctx, pod("plain", {}))
    got = {key: plain["metadata"].get("annotations", {}).get(key) for key in expected}
    if got != expected:
        raise ScenarioFailure(f"a pod without annotations came out with {got}, expected the team's {expected}")
    own = {
        "hami.io/node-scheduler-policy": "binpack"
        if expected["hami.io/node-scheduler-policy"] != "binpack"
        else "spread"
    }
    kept = admitted(ctx, pod("own", own))["metadata"]["annotations"]["hami.io/node-scheduler-policy"]
    if kept != own["hami.io/node-scheduler-policy"]:
        raise ScenarioFailure(f"a pod's own scheduler policy was overwritten with {kept}")
    priority = (plain["spec"].get("priorityClassName"), plain["spec"].get("priority"))
    bare = pod("bare", {})
    del bare["spec"]["nodeSelector"], bare["spec"]["tolerations"]
    filled = admitted(ctx, bare)["spec"]
    toleration = {"key": names.GPU_TAINT["key"], "operator": "Exists", "effect": names.GPU_TAINT["effect"]}
    # DefaultTolerationSeconds adds its not-ready/unreachable tolerations beside it.
    if toleration not in filled.get("tolerations", []) or filled.get("nodeSelector") != {names.POOL_LABEL: pool}:
        raise ScenarioFailure(
            f"a GPU pod without toleration and pool came out with {filled.get('tolerations')} and "
            f"{filled.get('nodeSelector')}, expected the GPU toleration and the team's one pool {pool}"
        )
    types = ctx.plan.pool_instance_types()[pool]
    largest_mib = max(ctx.catalog.gpu_model_of(ctx.catalog.instance_type(t)).nvml_memory_mib for t in types)
    try:
        admitted(ctx, pod("too-big", {}, largest_mib + 1))
    except KubectlError as error:
        refusal = str(error).splitlines()[-1]
    else:
        raise ScenarioFailure(f"a pod asking {largest_mib + 1} MiB on one GPU (largest {largest_mib}) was admitted")
    if str(largest_mib) not in refusal:
        raise ScenarioFailure(f"the refusal does not name the limit {largest_mib}: {refusal}")
    return Result(
        "team-admission",
        True,
        f"{team}: pod without annotations got {expected}, its own kept, priority {priority[0]}={priority[1]}; "
        f"without toleration and pool got both ({pool}); {largest_mib + 1} MiB on one GPU refused",
        {"priority": list(priority), "refusal": refusal},
    )


OBJECTS_SHOW = (
    "every Kubernetes object of the stack (NodePools, NodeOverlays, EC2NodeClass, namespaces, quotas, "
    "RBAC, the mock plugin and its device config, PriorityClasses, admission policies, prod's "
    "warm-headroom PodTemplate and CapacityBuffer) is accepted by the API server with the real CRDs, "
    "server-side applied; applying again changes no object's generation; the API server's CEL type check "
    "of the admission policies raises nothing but its known blind spot (it resolves no field of a "
    "container's `resources` map)"
)

SCENARIOS = (
    Scenario(
        "objects-dev",
        lambda ctx: objects_accepted(ctx, "dev"),
        before_stack=True,
        shows=OBJECTS_SHOW,
    ),
    Scenario(
        "objects-prod",
        lambda ctx: objects_accepted(ctx, "prod"),
        before_stack=True,
        shows=OBJECTS_SHOW,
    ),
    Scenario(
        "team-admission",
        team_admission,
        (SEED_TEAM,),
        shows=(
            "the team's MutatingAdmissionPolicies, run by the API server (server-side dry run): a GPU pod without"
            " annotations gets the team's `hami.io/*-scheduler-policy`, a pod's own annotation is kept, the "
            "tier's PriorityClass and priority are set, a GPU pod without toleration and pool selector gets the "
            "GPU pools' toleration and the team's one pool; the per-GPU ValidatingAdmissionPolicy refuses a pod "
            "asking more GPU memory than the pool's largest GPU, naming the limit"
        ),
    ),
)
