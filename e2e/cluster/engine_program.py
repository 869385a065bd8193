"""The program the engine phase runs: the project's own `__main__.py`, unchanged, under the rig's deviations applied as
Pulumi resource transforms (the one place they are made for the engine).

The engine's project folder (build/engine/project, written by e2e.cluster.engine) holds a two-line `__main__.py` that
calls `run()`. Every resource the program registers passes `rig_transform` first, which hands the Kubernetes object
to e2e.cluster.stack.for_rig, the same function the rig's own applier uses:

- a NodePool points at the rig's KWOKNodeClass instead of the EC2NodeClass (the kwok provider launches only for its
  own node class), and runs under a short name when its name is longer than five characters;
- its `consolidateAfter` is shortened to 15 s;
- each scheduled disruption budget moves to a daily window starting 12 h after the rig started;
- a NodeOverlay's NodePool requirement names the pools as the rig runs them.

The policy scenario previews with RIG_DEVIATIONS=off: the pack judges the stack as the program declares it (it rightly
refuses a NodePool on a KWOKNodeClass or an overlay naming a renamed pool); a preview changes nothing in the cluster.
With RIG_OVERLAY_MEMORY_FACTOR set (its variant), every NodeOverlay promises that many times the GPU memory the plan
gives it: more than HAMi registers, which the pack must refuse.
"""

from __future__ import annotations

import os
import runpy
from datetime import datetime
from typing import Any

import pulumi

from e2e.cluster.stack import for_rig
from gpushare import names
from gpushare.eks import FIXED_PLAN_DAY
from gpushare.paths import PROJECT_ROOT

STARTED_ENV = "RIG_STARTED"
OVERLAY_MEMORY_FACTOR_ENV = "RIG_OVERLAY_MEMORY_FACTOR"
DEVIATIONS_ENV = "RIG_DEVIATIONS"
CUSTOM_RESOURCE = "kubernetes:karpenter.sh/v1"
OVERLAY_TYPE = "kubernetes:karpenter.sh/v1alpha1:NodeOverlay"


def rig_object(props: dict[str, Any], started: datetime | None, memory_factor: int | None) -> dict[str, Any]:
    """A CustomResource's inputs as the rig that started at `started` runs them (None: as the program declares them),
    with a NodeOverlay's GPU memory multiplied by `memory_factor`."""
    shaped = for_rig(dict(props), started) if started is not None else dict(props)
    if memory_factor is not None and shaped.get("kind") == "NodeOverlay":
        capacity = shaped["spec"].get("capacity") or {}
        if names.GPU_MEMORY in capacity:
            shaped = {**shaped, "spec": {**shaped["spec"], "capacity": dict(capacity)}}
            shaped["spec"]["capacity"][names.GPU_MEMORY] = str(int(capacity[names.GPU_MEMORY]) * memory_factor)
    return shaped


def rig_transform(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """NodePools and NodeOverlays as the rig runs them; every other resource untouched."""
    if args.type_ not in (f"{CUSTOM_RESOURCE}:NodePool", OVERLAY_TYPE):
        return None
    started = datetime.fromisoformat(os.environ[STARTED_ENV]) if os.environ.get(DEVIATIONS_ENV) != "off" else None
    factor = os.environ.get(OVERLAY_MEMORY_FACTOR_ENV)
    props = rig_object(args.props, started, int(factor) if factor else None)
    return pulumi.ResourceTransformResult(props=props, opts=args.opts)


def run() -> None:
    """The project's program, judged for the golden plans' day as the offline plan is (its OFFLINE_TODAY hook)."""
    pulumi.runtime.register_resource_transform(rig_transform)
    runpy.run_path(
        str(PROJECT_ROOT / "__main__.py"), init_globals={"OFFLINE_TODAY": FIXED_PLAN_DAY}, run_name="__main__"
    )
