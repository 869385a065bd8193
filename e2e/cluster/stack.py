"""What the rig applies: the objects and Helm values of the stack's real offline plan (tools.plan output).

Four rig deviations from AWS are made here, on copies, and nowhere else: NodePools point at the rig's
KWOKNodeClass instead of the EC2NodeClass (the kwok provider only launches for its own node class),
`consolidateAfter` is shortened so consolidation is observable within a test run, every scheduled
disruption budget is moved to a window computed from the rig's start, so no scenario depends on the hour or
the weekday it runs at (the `disruption-budget` scenario places windows over and away from now on purpose), and a
NodePool named longer than five characters runs under a short name (rig_nodepool_name), its overlays following.
"""

from __future__ import annotations

import copy
import hashlib
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from e2e.cluster.errors import RigError
from gpushare import names
from gpushare.eks import FIXED_PLAN_DAY
from gpushare.paths import PROJECT_ROOT
from gpushare.stackfile import read_stack_document

KWOK_NODE_CLASS = {
    "apiVersion": "karpenter.kwok.sh/v1alpha1",
    "kind": "KWOKNodeClass",
    "metadata": {"name": "rig"},
}
RIG_CONSOLIDATE_AFTER = "15s"
# A scheduled budget's window starts this long after the rig's start, daily, and lasts at most
# RIG_WINDOW_MAX: the previous day's window ended at least an hour before the start, the next one begins
# hours after any run ends.
RIG_WINDOW_OFFSET = timedelta(hours=12)
RIG_WINDOW_MAX = timedelta(hours=11)
# KWOK's node names are long (e2e.cluster.tenants says why a pool's name must stay short): the rig runs a longer
# NodePool under `p` and two base-36 characters of its name's hash. The `gpushare.io/pool` label keeps the name.
RIG_NODEPOOL_NAME_MAX = 5


@dataclass(frozen=True)
class Plan:
    """The Kubernetes objects the stack creates directly, and each Helm release's values by name."""

    stack: str
    objects: tuple[dict[str, Any], ...]
    helm_values: dict[str, dict[str, Any]]
    # The stack file it was planned from (variants of it are planned from a copy).
    source: dict[str, Any] = field(default_factory=dict, compare=False)
    # Each Helm release's chart and version by name.
    charts: dict[str, tuple[str, str]] = field(default_factory=dict, compare=False)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [obj for obj in self.objects if obj["kind"] == kind]

    def namespace(self, name: str) -> dict[str, Any]:
        [namespace] = [obj for obj in self.of_kind("Namespace") if obj["metadata"]["name"] == name]
        return namespace

    def pool_instance_types(self) -> dict[str, list[str]]:
        """NodePool name -> the instance types its requirements allow."""
        return {
            pool["metadata"]["name"]: next(
                r["values"]
                for r in pool["spec"]["template"]["spec"]["requirements"]
                if r["key"] == names.INSTANCE_TYPE_LABEL
            )
            for pool in self.of_kind("NodePool")
        }

    def pool_sharing(self) -> dict[str, str]:
        """NodePool name -> how it shares GPUs (its gpushare.io/sharing label: hami, timeslice, exclusive)."""
        return {
            pool["metadata"]["name"]: pool["spec"]["template"]["metadata"]["labels"].get(names.SHARING_LABEL, "")
            for pool in self.of_kind("NodePool")
        }


def feature_gates(plan: Plan) -> dict[str, str]:
    """Karpenter's feature gates as its chart renders them into FEATURE_GATES from the plan's karpenter values
    (`settings.featureGates.nodeOverlay: true` becomes `NodeOverlay=true`: the gate's name is the key capitalized,
    YAML true is written `true`)."""
    gates = plan.helm_values[names.KARPENTER_RELEASE].get("settings", {}).get("featureGates", {})
    return {
        key[0].upper() + key[1:]: str(value).lower() if isinstance(value, bool) else str(value)
        for key, value in sorted(gates.items())
    }


def write_plan(stack: str, out: Path, stack_file: Path | None = None) -> Path:
    """Run the offline plan of Pulumi.<stack>.yaml, or of `stack_file` (exit 0, or 1 for policy findings,
    still written), judged for the golden plans' day (FIXED_PLAN_DAY): the rig proves the stack's behaviour, not
    its EKS support window (unit tests judge that), so a run never depends on the day it runs."""
    config = stack_file or PROJECT_ROOT / f"Pulumi.{stack}.yaml"
    plan = ["tools.plan", "--config", str(config), "--out", str(out), "--date", FIXED_PLAN_DAY.isoformat()]
    result = subprocess.run(
        [sys.executable, "-m", *plan],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
    )
    if result.returncode not in (0, 1):
        raise RigError(f"offline plan of {stack} failed (exit {result.returncode}): {result.stderr.strip()}")
    return out / stack


def stack_file(stack: str) -> dict[str, Any]:
    """Pulumi.<stack>.yaml as a document (its `config` map holds the stack's keys)."""
    return read_stack_document(PROJECT_ROOT / f"Pulumi.{stack}.yaml")


def plan_of(name: str, document: dict[str, Any], work: Path) -> Plan:
    """The offline plan of a stack file given as a document, rendered by the real program."""
    copy_file = work / f"Pulumi.{name}.yaml"
    copy_file.write_text(yaml.safe_dump(document))
    return replace(load_plan(name, write_plan(name, work / "plans", copy_file)), source=document)


def variant_plan(
    stack: str, name: str, work: Path, edit: Callable[[dict[str, Any]], None], base: Plan | None = None
) -> Plan:
    """The offline plan of a copy of Pulumi.<stack>.yaml (or of the stack file `base` was planned from) whose
    `config` map `edit` changed (a scenario's stack variant, rendered by the real program rather than patched object
    by object)."""
    document = copy.deepcopy(base.source) if base is not None else stack_file(stack)
    edit(document["config"])
    return plan_of(name, document, work)


def load_plan(stack: str, plan_dir: Path) -> Plan:
    objects = tuple(yaml.safe_load(path.read_text()) for path in sorted((plan_dir / "manifests").glob("*.yaml")))
    helm, charts = {}, {}
    for path in sorted((plan_dir / "helm").glob("*.yaml")):
        release = yaml.safe_load(path.read_text())
        helm[release["name"]] = release.get("values") or {}
        charts[release["name"]] = (str(release["chart"]), str(release["version"]))
    return Plan(stack, objects, helm, charts=charts)


def daily_window(start: datetime, duration: timedelta) -> dict[str, str]:
    """A budget's `schedule` and `duration` for a window opening every day at `start`'s UTC hour and minute
    (Karpenter reads budget schedules in UTC)."""
    minutes = int(duration.total_seconds() // 60)
    return {"schedule": f"{start.minute} {start.hour} * * *", "duration": f"{minutes // 60}h{minutes % 60}m"}


def budget_duration(text: str) -> timedelta:
    """A budget duration as Karpenter writes them (`9h`, `30m`, `1h30m`)."""
    text = text.removesuffix("0s")
    hours, _, rest = text.partition("h") if "h" in text else ("0", "", text)
    minutes = rest.removesuffix("m") or "0"
    return timedelta(hours=int(hours or 0), minutes=int(minutes))


def rig_nodepool_name(name: str) -> str:
    """The name the rig runs the NodePool `name` under: itself when short enough for KWOK's node names."""
    if len(name) <= RIG_NODEPOOL_NAME_MAX:
        return name
    digest = int(hashlib.sha256(name.encode()).hexdigest(), 16)
    return "p" + "".join("0123456789abcdefghijklmnopqrstuvwxyz"[digest // 36**k % 36] for k in range(2))


def _overlay_for_rig(overlay: dict[str, Any]) -> dict[str, Any]:
    """A NodeOverlay whose NodePool requirement names the NodePools as the rig runs them."""
    renamed = copy.deepcopy(overlay)
    for requirement in renamed["spec"].get("requirements", []):
        if requirement["key"] == names.NODEPOOL_LABEL:
            requirement["values"] = [rig_nodepool_name(value) for value in requirement["values"]]
    return renamed


def for_rig(obj: dict[str, Any], started: datetime) -> dict[str, Any]:
    """A NodePool (or its NodeOverlay) as the rig that started at `started` (UTC) runs it; every other object
    unchanged."""
    if obj["kind"] == "NodeOverlay":
        return _overlay_for_rig(obj)
    if obj["kind"] != "NodePool":
        return obj
    pool = copy.deepcopy(obj)
    pool["metadata"]["name"] = rig_nodepool_name(obj["metadata"]["name"])
    pool["spec"]["template"]["spec"]["nodeClassRef"] = {
        "group": "karpenter.kwok.sh",
        "kind": KWOK_NODE_CLASS["kind"],
        "name": KWOK_NODE_CLASS["metadata"]["name"],
    }
    disruption = pool["spec"].setdefault("disruption", {})
    disruption["consolidateAfter"] = RIG_CONSOLIDATE_AFTER
    for budget in disruption.get("budgets", []):
        if "schedule" in budget:
            budget.update(
                daily_window(started + RIG_WINDOW_OFFSET, min(budget_duration(budget["duration"]), RIG_WINDOW_MAX))
            )
    return pool
