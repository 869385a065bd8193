"""The engine phase's scenarios: `pulumi up`, idempotence, the policy pack, a change and `pulumi destroy` of the rig's
stack in the existing-cluster mode, run in this order on one cluster (each needs the one before).

- engine-up: `pulumi up` succeeds and every object of the offline plan's manifests is in the API server with the
  spec the plan shows (server defaults aside), as the rig's transforms shape it.
- engine-idempotent: `pulumi preview --expect-no-changes` passes and `pulumi refresh --expect-no-changes` finds no
  drift.
- engine-policy: `pulumi preview --policy-pack policies` passes with no mandatory violation, and fails, naming the
  policy, on the variant whose overlays promise more GPU memory than HAMi registers; nothing changed in the cluster.
- engine-change: one pool's maxGpus and one team's GPU quota changed in the stack file: the preview updates exactly
  the objects whose offline-plan manifests changed, `pulumi up` makes them so.
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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from e2e.cluster.api import ApiError
from e2e.cluster.engine import (
    ENGINE_DIR,
    Engine,
    changed_objects,
    charts_folder,
    differences,
    engine_plan,
    existing_document,
    hami_webhooks,
    karpenter_record,
    object_key,
    rig_objects,
    system_node,
)
from e2e.cluster.engine_program import DEVIATIONS_ENV, OVERLAY_MEMORY_FACTOR_ENV
from e2e.cluster.errors import RigError
from e2e.cluster.instance_types import kwok_instance_types
from e2e.cluster.kubectl import Kubectl, KubectlError
from e2e.cluster.rig import KUBELET_STARTED, Rig, wait_for
from e2e.cluster.stack import KWOK_NODE_CLASS, Plan, feature_gates, for_rig, plan_of, stack_file
from e2e.cluster.start import _apply_crds, _has_default_sa, say
from e2e.suites import report
from e2e.suites.base import Result
from gpushare import names
from gpushare.catalog import load_catalog
from gpushare.paths import PROJECT_ROOT

POLICY_PACK = PROJECT_ROOT / "policies"
# The policy the variant breaks: its NodeOverlays promise more GPU memory than HAMi registers.
OVERLAY_MEMORY_POLICY = "hami-overlay-capacity-matches"
# The Karpenter Deployment the existing-cluster mode reads (components/existing.py), and a refresh's update line.
READ_KARPENTER = "existing-cluster-karpenter"
REFRESH_UPDATED = re.compile(r"^ ~  \S+ (\S+) updated", re.M)
CHANGED_POOL_MAX_GPUS = 6
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
    "nvidia-device-plugin chart 0.20.0 from the archives folder, the stack pins 0.20.1 (the program warns).",
)
CHANGED_QUOTA_GPUS = 30


def _failed(name: str, started: float, summary: str, notes: list[str] | None = None) -> Result:
    return Result(name, False, summary, notes=notes or [], seconds=round(time.monotonic() - started, 1))


def _passed(
    name: str, started: float, summary: str, figures: dict[str, Any] | None = None, notes: list[str] | None = None
) -> Result:
    return Result(name, True, summary, figures or {}, notes or [], seconds=round(time.monotonic() - started, 1))


def _tail(text: str, lines: int = 12) -> list[str]:
    return text.strip().splitlines()[-lines:]


def up(engine: Engine, kubectl: Kubectl, plan: Plan) -> Result:
    started = time.monotonic()
    outcome = engine.run("up", "--yes", "--skip-preview")
    if outcome.code != 0:
        return _failed("engine-up", started, f"pulumi up failed (exit {outcome.code})", _tail(outcome.output))
    wanted = rig_objects(plan, engine.started)
    found = differences(kubectl, wanted)
    if found:
        notes = [f"{key}: {'; '.join(lines[:3])}" for key, lines in sorted(found.items())]
        return _failed("engine-up", started, f"{len(found)} of {len(wanted)} plan objects differ in the cluster", notes)
    return _passed(
        "engine-up",
        started,
        f"pulumi up created the stack in {outcome.seconds:.0f} s; all {len(wanted)} plan objects in the API server "
        "with the plan's spec",
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
    config["gpushare:pools"][0]["maxGpus"] = CHANGED_POOL_MAX_GPUS
    config["gpushare:teams"][0].setdefault("quota", {})["gpus"] = CHANGED_QUOTA_GPUS


def _resource_key(step: dict[str, Any]) -> str | None:
    """The Kubernetes object a preview step touches (kind/namespace/name), from its inputs."""
    state = step.get("newState") or step.get("oldState") or {}
    inputs = state.get("inputs") or {}
    metadata = inputs.get("metadata") or {}
    kind = inputs.get("kind")
    if not kind or "name" not in metadata:
        return None
    return f"{kind}/{metadata.get('namespace', '')}/{metadata['name']}"


def change(engine: Engine, kubectl: Kubectl, document: dict[str, Any], plan: Plan, work: Path) -> tuple[Result, Plan]:
    started = time.monotonic()
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
    return (
        _passed(
            "engine-change",
            started,
            f"maxGpus and a GPU quota changed: preview and up updated exactly {', '.join(sorted(expected_live))}",
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


def run_phase(engine: Engine, kubectl: Kubectl, document: dict[str, Any], work: Path) -> list[Result]:
    """The five scenarios in order; a scenario whose predecessor failed is reported as not run."""
    plan = engine_plan("rig-engine", document, work)
    results = [up(engine, kubectl, plan)]
    if results[-1].passed:
        results.append(idempotent(engine))
        results.append(policy(engine, kubectl, plan))
        result, plan = change(engine, kubectl, document, plan, work)
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
    results: list[Result] = []
    try:
        say("engine phase: starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler")
        rig.start_control_plane()
        kubectl = Kubectl(Path(rig.binary("kubectl")), rig.kubeconfig)
        _apply_crds(rig, kubectl)
        wait_for("the default ServiceAccount", lambda: _has_default_sa(kubectl), 60)
        instance_types = work / "instance-types.json"
        instance_types.write_text(json.dumps(kwok_instance_types(load_catalog()), indent=1))
        rig.start_kwok()
        rig.start_karpenter(instance_types, gates)
        kubectl.apply([KWOK_NODE_CLASS, karpenter_record(gates), system_node(KUBELET_STARTED)])
        engine = Engine(bin_dir, rig.kubeconfig, datetime.now(UTC))
        engine.prepare(document)
        say(f"engine phase: {engine.version()}, pulumi up of the rig's stack in the existing-cluster mode")
        results = run_phase(engine, kubectl, document, work)
    except KeyboardInterrupt:
        say("interrupted; stopping the rig")
        return 130
    except (RigError, KubectlError, ApiError) as error:
        say(str(error))
        return 2
    finally:
        rig.stop()
        keep = ENGINE_DIR / "logs"
        shutil.rmtree(keep, ignore_errors=True)
        if rig.log_dir.exists():
            shutil.copytree(rig.log_dir, keep)
        shutil.rmtree(work, ignore_errors=True)
    report.write(ENGINE_DIR, results, time.monotonic() - started_at, 0.0, DEVIATIONS)
    print(report.table(results, time.monotonic() - started_at, "build/engine/report.md"))
    return 0 if results and all(result.passed for result in results) else 1
