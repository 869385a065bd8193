"""Inside the rig's network namespace: start the cluster on the stack, apply the team's manifests, watch until
nothing moves, gather what happened to every workload and pod, stop.

Every workload is applied on its own (server-side, as `kubectl apply --server-side` would), so one the API server
refuses does not stop the others, and all go onto one cluster at once: they compete for the team's quota and
pools as they would. A CronJob is applied and its job template run once now, as `kubectl create job
--from=cronjob/<name>` does (its schedule may not come round for hours).
"""

from __future__ import annotations

import copy
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from e2e.cluster.api import ApiError
from e2e.cluster.invariants import HAMI_DEVICES
from e2e.cluster.kubectl import KubectlError
from e2e.cluster.stack import plan_of, rig_nodepool_name, stack_file
from e2e.cluster.start import Cluster, say
from e2e.cluster.workloads import HAMI_BIND_PHASE, Context, initialized
from e2e.tryout.manifests import Manifests, Workload
from e2e.tryout.reasons import FINAL, TeamView, asks_of, messages_about, pending
from gpushare import names

# Nothing changed for this long, and no node is still coming up: the run has settled. The rig's kube-schedulers
# retry an unschedulable pod within 15 s (`--pod-max-in-unschedulable-pods-duration`), Karpenter batches pending
# pods within 10 s and HAMi re-reads nodes every 15 s: 45 s covers a round of each.
SETTLE_S = 45
TRY_TIMEOUT_S = 480
POLL_S = 2.0
# What kubectl create job --from=cronjob/... marks a Job with.
CRONJOB_INSTANTIATE = ("cronjob.kubernetes.io/instantiate", "manual")
OWNED = {"Deployment": "ReplicaSet", "CronJob": "Job"}


@dataclass
class Seen:
    """What the run saw: per workload its admission (None: admitted) and when it was applied; per pod uid when it
    was first seen placed; every NodeClaim that existed, with its type and pool."""

    admission: dict[str, str | None] = field(default_factory=dict)
    applied_at: dict[str, float] = field(default_factory=dict)
    placed_at: dict[str, float] = field(default_factory=dict)
    claims: dict[str, dict[str, str]] = field(default_factory=dict)
    # A Job's pods once done, with their node: consolidation may take the node away, and the pod with it (the pod
    # garbage collector deletes pods of nodes that are gone), before the report is written.
    finished: dict[str, dict[str, Any]] = field(default_factory=dict)
    finished_nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    settled: bool = True
    seconds: float = 0.0


def server_message(error: KubectlError) -> str:
    """The API server's message without kubectl's wrapping (`Error from server (Forbidden): error when ...:`)."""
    text = str(error).strip()
    text = re.sub(r"^Error from server \([A-Za-z]+\): ", "", text)
    return re.sub(r'^error when [a-z]+ "STDIN": ', "", text)


def _apply(ctx: Context, workload: Workload, seen: Seen) -> None:
    key = workload.source
    seen.applied_at[key] = time.monotonic()
    try:
        ctx.kubectl.apply([workload.obj])
    except KubectlError as error:
        seen.admission[key] = server_message(error)
        return
    seen.admission[key] = None
    if workload.kind == "CronJob":
        namespace = workload.obj["metadata"]["namespace"]
        cronjob = ctx.api.get(f"/apis/batch/v1/namespaces/{namespace}/cronjobs/{workload.name}")
        template = copy.deepcopy(workload.obj["spec"]["jobTemplate"])
        metadata = template.get("metadata") or {}
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                **metadata,
                "name": f"{workload.name}-try"[:63],
                "namespace": namespace,
                "annotations": {**(metadata.get("annotations") or {}), CRONJOB_INSTANTIATE[0]: CRONJOB_INSTANTIATE[1]},
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "CronJob",
                        "name": workload.name,
                        "uid": cronjob["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": template["spec"],
        }
        try:
            ctx.kubectl.apply([job])
        except KubectlError as error:
            seen.admission[key] = server_message(error)


def owner_chain(namespace_objects: dict[str, list[dict[str, Any]]]) -> dict[str, tuple[str, str]]:
    """uid of a ReplicaSet or Job -> (kind, name) of the Deployment or CronJob that owns it."""
    chain = {}
    for kind in ("ReplicaSet", "Job"):
        for obj in namespace_objects[kind]:
            for owner in obj["metadata"].get("ownerReferences", []):
                if owner.get("controller"):
                    chain[obj["metadata"]["uid"]] = (owner["kind"], owner["name"])
    return chain


def workload_of(pod: dict[str, Any], chain: dict[str, tuple[str, str]]) -> tuple[str, str]:
    """(kind, name) of the workload a pod belongs to: a bare Pod is its own."""
    for owner in pod["metadata"].get("ownerReferences", []):
        if owner.get("controller"):
            return chain.get(owner["uid"], (owner["kind"], owner["name"]))
    return ("Pod", pod["metadata"]["name"])


def placed(pod: dict[str, Any]) -> bool:
    """Running (or done) on a node, and for a pod HAMi placed, its allocation complete."""
    phase = pod.get("status", {}).get("phase")
    if not pod.get("spec", {}).get("nodeName") or phase not in ("Running", "Succeeded"):
        return False
    annotations = pod["metadata"].get("annotations", {})
    return HAMI_DEVICES not in annotations or phase == "Succeeded" or annotations.get(HAMI_BIND_PHASE) == "success"


def _read(ctx: Context, namespace: str) -> dict[str, list[dict[str, Any]]]:
    base = f"/namespaces/{namespace}"
    return {
        "Pod": ctx.api.items(f"/api/v1{base}/pods"),
        "ReplicaSet": ctx.api.items(f"/apis/apps/v1{base}/replicasets"),
        "Job": ctx.api.items(f"/apis/batch/v1{base}/jobs"),
        "Event": ctx.api.items(f"/api/v1{base}/events"),
    }


def _wanted_done(manifests: Manifests, objects: dict[str, list[dict[str, Any]]], seen: Seen) -> bool:
    """Every admitted workload's pods placed: as many as it asks (a Job's completions may be Succeeded)."""
    pods = [p for p in objects["Pod"] if placed(p)]
    chain = owner_chain(objects)
    for workload in manifests.workloads:
        if seen.admission.get(workload.source) is not None:
            continue
        mine = [p for p in pods if workload_of(p, chain) == (workload.kind, workload.name)]
        if len(mine) < expected_pods(workload):
            return False
    return True


def expected_pods(workload: Workload) -> int:
    spec = workload.obj.get("spec") or {}
    if workload.kind == "Pod":
        return 1
    if workload.kind in ("Job", "CronJob"):
        job = spec if workload.kind == "Job" else spec["jobTemplate"].get("spec") or {}
        return int(job.get("completions", job.get("parallelism", 1)) or 1)
    return int(spec.get("replicas", 1))


def moving_claims(
    claims: list[dict[str, Any]], pods: list[dict[str, Any]], events: list[dict[str, Any]], team: TeamView
) -> list[dict[str, Any]]:
    """The NodeClaims that may yet place one of the team's pods: all but those of a pool whose every pending pod
    has its answer already (a verdict in FINAL, such as an H100 asked of an A10G pool). Karpenter cannot read
    HAMi's GPU-type annotation: it launches a node for such a pod, HAMi refuses the pod there, consolidation takes
    the node back, and again; counted, that loop would keep the run from ever settling."""
    answered_only: dict[str, bool] = {}
    for pod in pods:
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        if spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
            continue
        pool = (spec.get("nodeSelector") or {}).get(names.POOL_LABEL)
        final = pending(messages_about(pod, events), asks_of(pod), team).kind in FINAL
        if pool is None:
            if not final:
                return claims
            continue
        nodepool = rig_nodepool_name(pool)
        answered_only[nodepool] = answered_only.get(nodepool, True) and final
    quiet = {nodepool for nodepool, only in answered_only.items() if only}
    return [claim for claim in claims if claim["metadata"].get("labels", {}).get(names.NODEPOOL_LABEL) not in quiet]


def watch(ctx: Context, manifests: Manifests, team: TeamView) -> Seen:
    """Apply every workload, then watch until every pod is placed or nothing that may yet place one moved for
    SETTLE_S."""
    namespace = team.name
    seen = Seen()
    started = time.monotonic()
    for workload in manifests.workloads:
        _apply(ctx, workload, seen)
    last, stable_since = None, time.monotonic()
    while True:
        objects = _read(ctx, namespace)
        now = time.monotonic()
        chain = owner_chain(objects)
        by_source = {(w.kind, w.name): w.source for w in manifests.workloads}
        for pod in objects["Pod"]:
            source = by_source.get(workload_of(pod, chain))
            if source and placed(pod) and pod["metadata"]["uid"] not in seen.placed_at:
                seen.placed_at[pod["metadata"]["uid"]] = now - seen.applied_at[source]
            if source and placed(pod) and pod["status"]["phase"] == "Succeeded":
                seen.finished.setdefault(pod["metadata"]["uid"], pod)
                node = pod["spec"]["nodeName"]
                if node not in seen.finished_nodes:
                    seen.finished_nodes[node] = _node(ctx, node)
        claims = ctx.api.items("/apis/karpenter.sh/v1/nodeclaims")
        for claim in claims:
            labels = claim["metadata"].get("labels", {})
            seen.claims.setdefault(claim["metadata"]["name"], {})
            seen.claims[claim["metadata"]["name"]] |= {
                "type": labels.get("node.kubernetes.io/instance-type", ""),
                "nodepool": labels.get(names.NODEPOOL_LABEL, ""),
                "node": claim.get("status", {}).get("nodeName", ""),
            }
        moving = moving_claims(claims, objects["Pod"], objects["Event"], team)
        coming_up = not all(initialized(claim) for claim in moving)
        state = (
            tuple(sorted((p["metadata"]["uid"], p.get("status", {}).get("phase"), placed(p)) for p in objects["Pod"])),
            tuple(sorted(c["metadata"]["name"] for c in moving)),
            coming_up,
        )
        if state != last:
            last, stable_since = state, now
        if _wanted_done(manifests, objects, seen) and not coming_up:
            break
        if now - stable_since > SETTLE_S and not coming_up:
            break
        if now - started > TRY_TIMEOUT_S:
            seen.settled = False
            say(f"not settled after {TRY_TIMEOUT_S} s; reporting what there is")
            break
        time.sleep(POLL_S)
    seen.seconds = time.monotonic() - started
    return seen


def _node(ctx: Context, name: str) -> dict[str, Any]:
    """The node, or only its name once it is gone."""
    try:
        return ctx.api.get(f"/api/v1/nodes/{name}")
    except ApiError:
        return {"metadata": {"name": name, "labels": {}, "annotations": {}}}


def gather(ctx: Context, namespace: str) -> dict[str, Any]:
    """What the cluster holds at the end, for the report: the namespace's pods, controllers and events, the nodes
    and NodeClaims."""
    objects = _read(ctx, namespace)
    objects["StatefulSet"] = ctx.api.items(f"/apis/apps/v1/namespaces/{namespace}/statefulsets")
    objects["Node"] = ctx.api.items("/api/v1/nodes")
    objects["NodeClaim"] = ctx.api.items("/apis/karpenter.sh/v1/nodeclaims")
    return objects


def run_try(
    bin_dir: Path, work: Path, manifests: Manifests, team: TeamView, stack: str, logs: Path
) -> tuple[Seen, dict[str, list[dict[str, Any]]], float]:
    """Start the rig on `stack`, place the manifests in the team's namespace, gather; the cluster is stopped
    whatever happens (its logs kept in `logs`). Returns what was seen, the cluster's end state and the cluster's
    start-up time in seconds."""
    started = time.monotonic()
    plans = {stack: plan_of(stack, stack_file(stack), work)}
    cluster = Cluster(bin_dir, work, plans, stack)
    try:
        ctx = cluster.start()
        cluster.run_stack(ctx)
        startup_s = time.monotonic() - started
        say(f"placing {len(manifests.workloads)} workloads in namespace {team.name} of the {stack} stack")
        seen = watch(ctx, manifests, team)
        end = gather(ctx, team.name)
    finally:
        cluster.stop(logs)
    return seen, end, startup_s
