"""The engine phase's scenarios: `pulumi up`, idempotence, the policy pack, a change and `pulumi destroy` of the rig's
stack in the existing-cluster mode, run in this order on one cluster (each needs the one before).

- engine-up: `pulumi up` succeeds and every object of the offline plan's manifests is in the API server with the
  spec the plan shows (server defaults aside), as the rig's transforms shape it.
- engine-idempotent: `pulumi preview --expect-no-changes` passes and `pulumi refresh --expect-no-changes` finds no
  drift.
- engine-policy: `pulumi preview --policy-pack policies` passes with no mandatory violation, and fails, naming the
  policy, on the variant whose overlays promise more GPU memory than HAMi registers; nothing changed in the cluster.
- engine-change: one pool's maxGpus raised and one team's GPU memory quota lowered in the stack file: the preview
  updates exactly the objects whose offline-plan manifests changed, `pulumi up` makes them so, and Karpenter launches
  the node the old NodePool limit refused while HAMi refuses the vGPU pod it placed before.

After engine-up, HAMi's scheduler runs from the objects Helm created (e2e.cluster.hami_installed) and the node agent
plays the GPU nodes Karpenter launches.
- engine-destroy: `pulumi destroy` leaves no NodePool, NodeClaim, Karpenter node, stack namespace, HAMi webhook
  configuration or gpushare custom resource.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from e2e.cluster.api import Api, ApiError
from e2e.cluster.device_plugins import NvidiaPluginConfig
from e2e.cluster.engine import (
    ENGINE_DIR,
    Engine,
    changed_objects,
    differences,
    engine_plan,
    existing_cluster_records,
    existing_document,
    hami_webhooks,
    object_key,
    rig_objects,
)
from e2e.cluster.engine_program import DEVIATIONS_ENV, OVERLAY_MEMORY_FACTOR_ENV
from e2e.cluster.errors import RigError
from e2e.cluster.hami_installed import HamiInstalled, chart_deviations
from e2e.cluster.helm import charts_folder
from e2e.cluster.instance_types import kwok_instance_types
from e2e.cluster.kubectl import Kubectl, KubectlError
from e2e.cluster.node_agent import NodeAgent
from e2e.cluster.rig import Rig, wait_for
from e2e.cluster.stack import Plan, feature_gates, for_rig, plan_of, stack_file
from e2e.cluster.start import apply_crds, has_default_sa, say, start_hami_node, start_installed_hami
from e2e.cluster.workloads import HAMI_BIND_PHASE, PAUSE_IMAGE
from e2e.suites import report
from e2e.suites.base import Result
from gpushare import names
from gpushare.catalog import InstanceType, load_catalog
from gpushare.paths import PROJECT_ROOT

POLICY_PACK = PROJECT_ROOT / "policies"
# The policy the variant breaks: its NodeOverlays promise more GPU memory than HAMi registers.
OVERLAY_MEMORY_POLICY = "hami-overlay-capacity-matches"
# The Karpenter Deployment the existing-cluster mode reads (components/existing.py), and a refresh's update line.
READ_KARPENTER = "existing-cluster-karpenter"
REFRESH_UPDATED = re.compile(r"^ ~  \S+ (\S+) updated", re.M)
DEVIATIONS = (
    "The rig's deviations are Pulumi resource transforms (e2e/cluster/engine_program.py, through "
    "e2e.cluster.stack.for_rig): NodePools on the rig's KWOKNodeClass instead of the EC2NodeClass, consolidateAfter "
    "15s, scheduled disruption budgets moved to a daily window 12 h after the rig's start, NodePools named longer than "
    "five characters under a short name (their NodeOverlays' requirement following). The policy previews run without "
    "them.",
    "The stack is the dev stack file in the existing-cluster mode, monitoring off (its charts bring the Prometheus "
    "operator, which the rig does not run).",
    "The rig's Karpenter is a process: the cluster records it as Deployment kube-system/karpenter with no replicas, "
    "FEATURE_GATES as the process's flags, which the existing-cluster mode reads.",
    "The charts' pods run on a KWOK system node (KWOK plays them Running, their hook Jobs complete at once).",
    "The pulumi-kubernetes provider is 4.25.0, older than the Python SDK's 4.34.2 (the engine warns).",
    "HAMi's scheduler extender and its kube-scheduler run as processes started from the objects Helm created "
    "(the scheduler Deployment's containers' command lines and env, the ConfigMaps they mount, the "
    "MutatingWebhookConfiguration, the mock DaemonSet's ConfigMap), with the rig's kubeconfig, the rig's serving "
    "certificate at the extender's --cert_file/--key_file (the chart's cert-gen Job, which KWOK completes without "
    "running, makes it in a cluster), the webhook's clientConfig pointed at the extender on loopback with that "
    "certificate (no Service routing), and for the kube-scheduler back-off 1-2 s, unschedulable pods retried within "
    "15 s and its own port.",
)
# The change: the time-sliced pool's maxGpus raised by one (one more one-GPU node), the inference team's GPU memory
# quota lowered below what one probe pod asks (which it admitted before).
LIMITED_POOL = "g6-timeslice"
LIMITED_TEAM = "ml-research"
QUOTA_TEAM = "inference"
CHANGED_QUOTA_MIB = 8192
PROBE_MIB = 12288
KARPENTER_LIMIT_REFUSED = "all available instance types exceed limits for nodepool"
QUOTA_REFUSALS = ("exceeded quota", "exceeding resource quota")
WORKLOAD_TIMEOUT_S = 180


@dataclass
class Phase:
    """What the engine phase's scenarios share: the engine, the rig, and once `pulumi up` passed, HAMi as Helm
    installed it (its processes running) and the node agent playing the GPU nodes."""

    engine: Engine
    rig: Rig
    kubectl: Kubectl
    nvidia: NvidiaPluginConfig | None
    hami: HamiInstalled | None = None
    agent: NodeAgent | None = None
    deviations: list[str] = field(default_factory=list)

    def start_hami(self) -> None:
        """HAMi's processes from the objects Helm created, and the node agent with the device configs they hold."""
        self.hami, configs = start_installed_hami(self.rig, self.kubectl)

        def start_node(node: str, itype: InstanceType, _labels: dict[str, str]) -> None:
            start_hami_node(self.rig, configs, node, itype)

        zeroed = (*self.hami.resource_names, names.GPU_SHARED)
        self.agent = NodeAgent(self.rig.api, load_catalog(), zeroed, start_node, self.nvidia)
        self.agent.start()

    def stop(self) -> None:
        if self.agent is not None and self.agent.is_alive():
            self.agent.stop()


def _failed(name: str, started: float, summary: str, notes: list[str] | None = None) -> Result:
    return Result(name, False, summary, notes=notes or [], seconds=round(time.monotonic() - started, 1))


def _passed(
    name: str, started: float, summary: str, figures: dict[str, Any] | None = None, notes: list[str] | None = None
) -> Result:
    return Result(name, True, summary, figures or {}, notes or [], seconds=round(time.monotonic() - started, 1))


def _tail(text: str, lines: int = 12) -> list[str]:
    return text.strip().splitlines()[-lines:]


def up(phase: Phase, plan: Plan) -> Result:
    started = time.monotonic()
    engine, kubectl = phase.engine, phase.kubectl
    outcome = engine.run("up", "--yes", "--skip-preview")
    if outcome.code != 0:
        return _failed("engine-up", started, f"pulumi up failed (exit {outcome.code})", _tail(outcome.output))
    wanted = rig_objects(plan, engine.started)
    found = differences(kubectl, wanted)
    if found:
        notes = [f"{key}: {'; '.join(lines[:3])}" for key, lines in sorted(found.items())]
        return _failed("engine-up", started, f"{len(found)} of {len(wanted)} plan objects differ in the cluster", notes)
    try:
        phase.deviations += chart_deviations(kubectl)
        phase.start_hami()
    except (RigError, KubectlError, ApiError) as error:
        return _failed("engine-up", started, f"HAMi from the objects Helm created: {error}")
    return _passed(
        "engine-up",
        started,
        f"pulumi up created the stack in {outcome.seconds:.0f} s; all {len(wanted)} plan objects in the API server "
        "with the plan's spec; HAMi's scheduler, kube-scheduler and webhook started from the objects Helm created",
        {"up_seconds": round(outcome.seconds, 1), "objects": len(wanted)},
    )


def idempotent(engine: Engine) -> Result:
    started = time.monotonic()
    preview = engine.run("preview", "--expect-no-changes", "--diff")
    if preview.code != 0:
        return _failed("engine-idempotent", started, "preview right after up wants changes", _tail(preview.output, 30))
    refresh = engine.run("refresh", "--yes")
    drifted = refreshed(refresh.output) - {READ_KARPENTER}
    if refresh.code != 0 or drifted:
        return _failed("engine-idempotent", started, f"refresh found drift in {sorted(drifted)}", _tail(refresh.output))
    return _passed(
        "engine-idempotent",
        started,
        "preview --expect-no-changes passes; refresh finds no drift in any resource the stack manages",
        notes=[
            f"refresh rewrites the state of {READ_KARPENTER}, the Karpenter Deployment the stack only reads "
            "(Deployment.get): pulumi/pulumi#16401, a refresh of a .get resource diffs; not a drift of the cluster"
        ]
        if READ_KARPENTER in refreshed(refresh.output)
        else [],
    )


def refreshed(output: str) -> set[str]:
    """The resources (by name) a refresh's output says it updated."""
    return {match.group(1) for match in REFRESH_UPDATED.finditer(output)}


def policy(engine: Engine, kubectl: Kubectl, plan: Plan) -> Result:
    started = time.monotonic()
    before = kubectl.versions(rig_objects(plan, engine.started))
    # The pack judges the stack as the program declares it, without the rig's deviations (e2e.cluster.engine_program).
    clean = engine.run("preview", "--policy-pack", str(POLICY_PACK), extra={DEVIATIONS_ENV: "off"})
    if clean.code != 0 or "[mandatory]" in clean.output:
        return _failed("engine-policy", started, "the rig's stack does not pass the pack", _tail(clean.output, 30))
    inflated = {DEVIATIONS_ENV: "off", OVERLAY_MEMORY_FACTOR_ENV: "2"}
    variant = engine.run("preview", "--policy-pack", str(POLICY_PACK), extra=inflated)
    named = OVERLAY_MEMORY_POLICY in variant.output
    after = kubectl.versions(rig_objects(plan, engine.started))
    if variant.code == 0 or not named or after != before:
        summary = (
            f"variant preview exit {variant.code}, policy {OVERLAY_MEMORY_POLICY} named: {named}, "
            f"cluster unchanged: {after == before}"
        )
        return _failed("engine-policy", started, summary, _tail(variant.output, 30))
    return _passed(
        "engine-policy",
        started,
        f"the pack passes the stack (0 mandatory) and refuses the overlay variant (exit {variant.code}, "
        f"{OVERLAY_MEMORY_POLICY}); nothing changed in the cluster",
    )


def _edit(document: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    edit(changed["config"])
    return changed


def _change_pool_and_quota(config: dict[str, Any]) -> None:
    [pool] = [pool for pool in config["gpushare:pools"] if pool["name"] == LIMITED_POOL]
    pool["maxGpus"] += 1
    [team] = [team for team in config["gpushare:teams"] if team["name"] == QUOTA_TEAM]
    team["quota"]["gpuMemoryMib"] = CHANGED_QUOTA_MIB


def _one_gpu_node_each(team: str, pool: str, replicas: int) -> dict[str, Any]:
    """A Deployment of pods asking one time-sliced GPU each, no two on one node: `replicas` one-GPU nodes."""
    app = {"app": "limit-probe"}
    affinity = {"labelSelector": {"matchLabels": app}, "topologyKey": "kubernetes.io/hostname"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "limit-probe", "namespace": team},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": app},
            "template": {
                "metadata": {"labels": app},
                "spec": {
                    **_gpu_pod_spec(pool, {names.GPU_SHARED: "1"}),
                    "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [affinity]}},
                },
            },
        },
    }


def _gpu_pod_spec(pool: str, limits: dict[str, str]) -> dict[str, Any]:
    toleration = {"key": names.GPU_TAINT["key"], "operator": "Exists", "effect": names.GPU_TAINT["effect"]}
    resources = {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": limits}
    return {
        "nodeSelector": {names.POOL_LABEL: pool},
        "tolerations": [toleration],
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "server", "image": PAUSE_IMAGE, "resources": resources}],
    }


def _vgpu_probe(hami: HamiInstalled, team: str, pool: str) -> dict[str, Any]:
    """A pod asking one vGPU of PROBE_MIB, in HAMi's resource names as its device config holds them."""
    count, memory, cores, _percentage = hami.resource_names
    spec = _gpu_pod_spec(pool, {count: "1", memory: str(PROBE_MIB), cores: "10"})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "quota-probe", "namespace": team}, "spec": spec}


def _team_pool(document: dict[str, Any], team: str) -> str:
    [found] = [t for t in document["config"]["gpushare:teams"] if t["name"] == team]
    return str(found["pools"][0])


def _pods(api: Api, namespace: str, app: str) -> list[dict[str, Any]]:
    return api.items(f"/api/v1/namespaces/{namespace}/pods?labelSelector=app%3D{app}")


def _running(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [pod for pod in pods if pod.get("status", {}).get("phase") == "Running"]


def _event_said(api: Api, namespace: str, needle: str) -> bool:
    return any(needle in str(event.get("message", "")) for event in api.items(f"/api/v1/namespaces/{namespace}/events"))


def _placed_by_hami(api: Api, hami: HamiInstalled, namespace: str, name: str) -> bool:
    """Running, HAMi's webhook having handed it to HAMi's scheduler, which bound it (its device plugin's bind phase)."""
    pod = api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    annotations = pod["metadata"].get("annotations", {})
    return (
        pod.get("status", {}).get("phase") == "Running"
        and pod["spec"].get("schedulerName") == hami.scheduler_name
        and annotations.get(HAMI_BIND_PHASE) == "success"
    )


def _pool_nodes(api: Api, pool: str) -> int:
    return len(api.items(f"/api/v1/nodes?labelSelector={names.POOL_LABEL}%3D{pool}"))


def _quota_refusal(kubectl: Kubectl, pod: dict[str, Any]) -> str:
    """Who refused the pod at admission ('' when it was admitted, then deleted)."""
    try:
        kubectl.apply([pod])
    except KubectlError as error:
        line = str(error).splitlines()[-1]
        if any(refusal in line for refusal in QUOTA_REFUSALS):
            return line
        raise
    kubectl.delete([pod])
    return ""


def _resource_key(step: dict[str, Any]) -> str | None:
    """The Kubernetes object a preview step touches (kind/namespace/name), from its inputs."""
    state = step.get("newState") or step.get("oldState") or {}
    inputs = state.get("inputs") or {}
    metadata = inputs.get("metadata") or {}
    kind = inputs.get("kind")
    if not kind or "name" not in metadata:
        return None
    return f"{kind}/{metadata.get('namespace', '')}/{metadata['name']}"


def _before_change(phase: Phase, document: dict[str, Any], limited: dict[str, Any], probe: dict[str, Any]) -> str:
    """Under the old values: the limit probe's one-GPU nodes up to the old maxGpus, its last pod refused by Karpenter's
    NodePool limit; the quota probe admitted and placed by HAMi, then deleted."""
    [pool] = [p for p in document["config"]["gpushare:pools"] if p["name"] == LIMITED_POOL]
    old_max = int(pool["maxGpus"])
    api, kubectl = phase.rig.api, phase.kubectl
    kubectl.apply([limited, probe])
    team = limited["metadata"]["namespace"]
    wait_for(
        f"{old_max} limit-probe pods Running and Karpenter refusing the next ('{KARPENTER_LIMIT_REFUSED}')",
        lambda: (
            len(_running(_pods(api, team, "limit-probe"))) == old_max
            and _event_said(api, team, KARPENTER_LIMIT_REFUSED)
        ),
        WORKLOAD_TIMEOUT_S,
        interval_s=1,
    )
    namespace, name = probe["metadata"]["namespace"], probe["metadata"]["name"]
    wait_for("the quota probe placed by HAMi", lambda: _placed_by_hami(api, phase.hami, namespace, name), 120, 1)
    kubectl.delete([probe])
    return (
        f"before: {old_max} of {old_max + 1} one-GPU pods of {LIMITED_POOL} on {_pool_nodes(api, LIMITED_POOL)} nodes, "
        f"the last refused by Karpenter ('{KARPENTER_LIMIT_REFUSED}'); a {PROBE_MIB} MiB vGPU pod in {QUOTA_TEAM} "
        "admitted and placed by HAMi"
    )


def _after_change(phase: Phase, limited: dict[str, Any], probe: dict[str, Any]) -> str:
    """Under the new values: every limit-probe pod Running on a node of its own, the quota probe refused."""
    api = phase.rig.api
    team, replicas = limited["metadata"]["namespace"], int(limited["spec"]["replicas"])
    wait_for(
        f"all {replicas} limit-probe pods Running",
        lambda: len(_running(_pods(api, team, "limit-probe"))) == replicas,
        WORKLOAD_TIMEOUT_S,
        interval_s=1,
    )
    refused = _quota_refusal(phase.kubectl, probe)
    if not refused:
        raise RigError(f"the {PROBE_MIB} MiB vGPU pod was admitted under the {CHANGED_QUOTA_MIB} MiB quota")
    return (
        f"after: all {replicas} on {_pool_nodes(api, LIMITED_POOL)} nodes (Karpenter launched what the old limit "
        f"refused); the same vGPU pod refused: {refused}"
    )


def change(phase: Phase, document: dict[str, Any], plan: Plan, work: Path) -> tuple[Result, Plan]:
    """The changed values acted on, shown with the limit probe and the quota probe: before the change and after."""
    started = time.monotonic()
    kubectl = phase.kubectl
    [pool] = [p for p in document["config"]["gpushare:pools"] if p["name"] == LIMITED_POOL]
    limited = _one_gpu_node_each(LIMITED_TEAM, LIMITED_POOL, int(pool["maxGpus"]) + 1)
    probe = _vgpu_probe(phase.hami, QUOTA_TEAM, _team_pool(document, QUOTA_TEAM))
    try:
        result, changed_plan = _change(phase, document, plan, work, limited, probe)
    except (RigError, KubectlError, ApiError) as error:
        result, changed_plan = _failed("engine-change", started, str(error).splitlines()[0], _tail(str(error))), plan
    finally:
        kubectl.delete([limited, probe])
    result.seconds = round(time.monotonic() - started, 1)
    return result, changed_plan


def _change(
    phase: Phase, document: dict[str, Any], plan: Plan, work: Path, limited: dict[str, Any], probe: dict[str, Any]
) -> tuple[Result, Plan]:
    started = time.monotonic()
    engine, kubectl = phase.engine, phase.kubectl
    before = _before_change(phase, document, limited, probe)
    changed_document = _edit(document, _change_pool_and_quota)
    changed_plan = engine_plan("rig-engine-changed", changed_document, work)
    expected = changed_objects(plan, changed_plan)
    engine.write_config(changed_document)
    outcome, steps = engine.preview_steps()
    touched = {
        key for step in steps if step.get("op") not in ("same", "read") and (key := _resource_key(step)) and "/" in key
    }
    ops = sorted({step.get("op", "") for step in steps if step.get("op") not in ("same", "read")})
    # The objects as the rig runs them (a NodePool under its short name).
    expected_live = {
        object_key(for_rig(obj, engine.started)) for obj in changed_plan.objects if object_key(obj) in expected
    }
    if outcome.code != 0 or touched != expected_live or ops != ["update"]:
        notes = [f"plan changed: {sorted(expected_live)}", f"preview touches: {sorted(touched)}", f"ops: {ops}"]
        return _failed("engine-change", started, "the preview does not update exactly the changed objects", notes), plan
    applied = engine.run("up", "--yes", "--skip-preview")
    if applied.code != 0:
        return _failed("engine-change", started, f"pulumi up failed (exit {applied.code})", _tail(applied.output)), plan
    wanted = [obj for obj in rig_objects(changed_plan, engine.started) if object_key(obj) in expected_live]
    found = differences(kubectl, wanted)
    if found:
        notes = [f"{key}: {'; '.join(lines[:3])}" for key, lines in sorted(found.items())]
        return _failed("engine-change", started, "the cluster does not hold the changed values", notes), plan
    after = _after_change(phase, limited, probe)
    return (
        _passed(
            "engine-change",
            started,
            f"{LIMITED_POOL} maxGpus +1 and {QUOTA_TEAM}'s GPU memory quota {CHANGED_QUOTA_MIB} MiB: preview and up "
            f"updated exactly {', '.join(sorted(expected_live))}; {before}; {after}",
            {"updated": sorted(expected_live)},
        ),
        changed_plan,
    )


def destroy(engine: Engine, kubectl: Kubectl, plan: Plan) -> Result:
    started = time.monotonic()
    outcome = engine.run("destroy", "--yes", "--skip-preview")
    if outcome.code != 0:
        return _failed("engine-destroy", started, f"pulumi destroy failed (exit {outcome.code})", _tail(outcome.output))
    left = []
    for kind in ("nodepools", "nodeclaims", "nodeoverlays", "ec2nodeclasses", "capacitybuffers"):
        listed = json.loads(kubectl.run("get", kind, "-A", "-o", "json"))["items"]
        left += [f"{kind}/{item['metadata']['name']}" for item in listed]
    nodes = json.loads(kubectl.run("get", "nodes", "-o", "json"))["items"]
    left += [f"node/{n['metadata']['name']}" for n in nodes if names.NODEPOOL_LABEL in n["metadata"].get("labels", {})]
    stack_namespaces = {obj["metadata"]["name"] for obj in plan.of_kind("Namespace")}
    listed = json.loads(kubectl.run("get", "namespaces", "-o", "json"))["items"]
    left += [f"namespace/{ns['metadata']['name']}" for ns in listed if ns["metadata"]["name"] in stack_namespaces]
    left += [f"mutatingwebhookconfiguration/{name}" for name in hami_webhooks(kubectl)]
    if left:
        return _failed("engine-destroy", started, f"destroy left {len(left)} objects", left[:20])
    return _passed(
        "engine-destroy",
        started,
        f"pulumi destroy removed everything in {outcome.seconds:.0f} s (no NodePool, NodeClaim, Karpenter node, "
        "stack namespace, HAMi webhook or gpushare custom resource left)",
        {"destroy_seconds": round(outcome.seconds, 1)},
    )


def run_phase(phase: Phase, document: dict[str, Any], work: Path) -> list[Result]:
    """The five scenarios in order; a scenario whose predecessor failed is reported as not run."""
    plan = engine_plan("rig-engine", document, work)
    engine, kubectl = phase.engine, phase.kubectl
    results = [up(phase, plan)]
    if results[-1].passed:
        results.append(idempotent(engine))
        results.append(policy(engine, kubectl, plan))
        result, plan = change(phase, document, plan, work)
        results.append(result)
    results.append(destroy(engine, kubectl, plan))
    return results


def run_engine(bin_dir: Path, work: Path) -> int:
    """A fresh rig (control plane, Karpenter's CRDs, KWOK with a system node, the rig's Karpenter recorded as the
    cluster's), the engine phase on it, build/engine/report.{json,md}; exit 0 when every scenario passed."""
    started_at = time.monotonic()
    charts = charts_folder()
    dev = plan_of("dev", stack_file("dev"), work)
    gates = feature_gates(dev)
    document = existing_document(stack_file("dev"), gates, charts)
    # `pulumi preview --policy-pack` starts the pack in its virtualenv (policies/PulumiPolicy.yaml: venv), which must
    # exist: the project's own.
    pack_venv = POLICY_PACK / "venv"
    if not pack_venv.exists():
        pack_venv.symlink_to(Path(sys.executable).parent.parent)
    rig = Rig(bin_dir, work, allow_privileged=True)
    nvidia_values = dev.helm_values.get(names.NVIDIA_PLUGIN_RELEASE)
    nvidia = NvidiaPluginConfig.from_values(nvidia_values) if nvidia_values is not None else None
    phase: Phase | None = None
    results: list[Result] = []
    try:
        say("engine phase: starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler")
        rig.start_control_plane()
        kubectl = Kubectl(Path(rig.binary("kubectl")), rig.kubeconfig)
        apply_crds(rig, kubectl)
        wait_for("the default ServiceAccount", lambda: has_default_sa(kubectl), 60)
        instance_types = work / "instance-types.json"
        instance_types.write_text(json.dumps(kwok_instance_types(load_catalog()), indent=1))
        rig.start_kwok()
        rig.start_karpenter(instance_types, gates)
        kubectl.apply(existing_cluster_records(gates))
        engine = Engine(bin_dir, rig.kubeconfig, datetime.now(UTC))
        engine.prepare(document)
        say(f"engine phase: {engine.version()}, pulumi up of the rig's stack in the existing-cluster mode")
        phase = Phase(engine, rig, kubectl, nvidia)
        results = run_phase(phase, document, work)
    except KeyboardInterrupt:
        say("interrupted; stopping the rig")
        return 130
    except (RigError, KubectlError, ApiError) as error:
        say(str(error))
        return 2
    finally:
        if phase is not None:
            phase.stop()
        rig.stop()
        keep = ENGINE_DIR / "logs"
        shutil.rmtree(keep, ignore_errors=True)
        if rig.log_dir.exists():
            shutil.copytree(rig.log_dir, keep)
        shutil.rmtree(work, ignore_errors=True)
    deviations = (*DEVIATIONS, *(phase.deviations if phase is not None else []))
    report.write(ENGINE_DIR, results, time.monotonic() - started_at, 0.0, deviations)
    print(report.table(results, time.monotonic() - started_at, "build/engine/report.md"))
    return 0 if results and all(result.passed for result in results) else 1
