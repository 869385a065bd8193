"""Run the dev stack's team admission policies on sample pods with kube-apiserver's own CEL code
(`make admission-test`): tools/admission builds a small Go program on k8s.io/apiserver v0.36.1 that compiles
each matchCondition, ApplyConfiguration mutation and validation exactly as the API server does, and merges
the apply configurations into the pod with the Pod schema. Needs Go; without it: one line, exit 2.

Each case states the pod as it reaches MutatingAdmissionPolicy: the Priority plugin has already run
(priority 0, PreemptLowerPriority when the pod named no class), so the policy must overwrite both.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from gpushare import names
from gpushare.config import StackConfig
from gpushare.eks import FIXED_PLAN_DAY
from gpushare.errors import EXIT_BAD_INPUT
from gpushare.loader import load_stack_config
from gpushare.paths import PROJECT_ROOT
from gpushare.render import tenancy
from gpushare.stackfile import read_stack_file

TOOL = Path(__file__).resolve().parent / "admission"


def pod(namespace: str, limits: dict[str, str], **spec: Any) -> dict[str, Any]:
    annotations = spec.pop("annotations", None)
    metadata: dict[str, Any] = {"name": "sample", "namespace": namespace}
    if annotations:
        metadata["annotations"] = annotations
    container = {"name": "main", "image": "busybox", "resources": {"limits": limits} if limits else {}}
    defaults = {"priority": 0, "preemptionPolicy": "PreemptLowerPriority"}
    return {"metadata": metadata, "spec": {**defaults, "containers": [container], **spec}}


def pool_affinity(operator: str, values: list[str] | None) -> dict[str, Any]:
    """Required node affinity with one expression on the pool label."""
    expression: dict[str, Any] = {"key": names.POOL_LABEL, "operator": operator}
    if values is not None:
        expression["values"] = values
    terms = [{"matchExpressions": [expression]}]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


def run(config: StackConfig, team: str, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    objects = tenancy.team_objects(config, next(t for t in config.teams if t.name == team))
    request = {
        "mutating": [o for o in objects if o["kind"] == "MutatingAdmissionPolicy"],
        "validating": [o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"],
        "pods": pods,
    }
    done = subprocess.run(
        ["go", "run", "."], cwd=TOOL, input=json.dumps(request), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"admission tool failed: {done.stderr.strip()}")
    return json.loads(done.stdout)


def check(label: str, actual: Any, expected: Any, failures: list[str]) -> None:
    if actual != expected:
        failures.append(f"{label}: got {actual!r}, want {expected!r}")


def main() -> int:
    if shutil.which("go") is None:
        print("make admission-test needs Go (see tools/admission/go.mod)", file=sys.stderr)
        return EXIT_BAD_INPUT
    dev = load_stack_config(read_stack_file(PROJECT_ROOT / "Pulumi.dev.yaml"), today=FIXED_PLAN_DAY)
    hami = {names.GPU: "1", names.GPU_MEMORY: "4000"}

    def inference(limits: dict[str, str], **spec: Any) -> dict[str, Any]:
        """A pod of team inference on its pool, unless the case selects nodes itself."""
        if "nodeSelector" not in spec and "affinity" not in spec:
            spec["nodeSelector"] = {names.POOL_LABEL: "g4dn-shared"}
        return pod("inference", limits, **spec)

    own = {names.HAMI_NODE_POLICY_ANNOTATION: "binpack"}
    tolerating = [{"key": names.GPU_TAINT["key"], "operator": "Exists"}]
    bare, annotated, cpu, classed, system_class, too_big, init_too_big, percent, unselected, tolerant, *selecting = run(
        dev,
        "inference",
        [
            inference(hami),
            inference(hami, annotations=own),
            pod("inference", {"cpu": "1"}),  # a CPU pod needs no pool
            inference(hami, priorityClassName="gpushare-standard", priority=100_000),
            inference(hami, priorityClassName="system-node-critical", priority=2_000_001_000),
            inference({names.GPU: "1", names.GPU_MEMORY: "16000"}),
            inference(
                hami,
                initContainers=[
                    {"name": "warm", "image": "busybox", "resources": {"limits": {names.GPU_CORES: "150"}}}
                ],
            ),
            inference({names.GPU: "1", names.GPU_MEMORY_PERCENTAGE: "100"}),
            pod("inference", hami),
            inference(hami, tolerations=tolerating),
            inference(hami, nodeSelector={names.POOL_LABEL: "g4dn-shared"}),
            inference(hami, affinity=pool_affinity("In", ["g4dn-shared"])),
            inference(hami, nodeSelector={names.POOL_LABEL: "g5-shared"}),
            inference(hami, nodeSelector={names.NODEPOOL_LABEL: "g5-shared"}),
            inference(hami, affinity=pool_affinity("In", ["g4dn-shared", "g5-shared"])),
            inference(hami, affinity=pool_affinity("NotIn", ["g4dn-shared"])),
            inference(hami, affinity=pool_affinity("Exists", None)),
        ],
    )
    failures: list[str] = []
    team_policy = {names.HAMI_NODE_POLICY_ANNOTATION: "spread", names.HAMI_GPU_POLICY_ANNOTATION: "binpack"}
    check("HAMi pod gets the team policy", bare["pod"]["metadata"].get("annotations"), team_policy, failures)
    check(
        "own annotation wins",
        annotated["pod"]["metadata"].get("annotations"),
        {**team_policy, names.HAMI_NODE_POLICY_ANNOTATION: "binpack"},
        failures,
    )
    check("CPU pod gets no scheduler policy", cpu["pod"]["metadata"].get("annotations"), None, failures)
    critical = {
        "priorityClassName": "gpushare-critical",
        "priority": 1_000_000,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    check("GPU pod priority", {k: bare["pod"]["spec"].get(k) for k in critical}, critical, failures)
    check("CPU pod keeps priority 0", cpu["pod"]["spec"].get("priorityClassName"), None, failures)
    check(
        "HAMi pod goes to HAMi's scheduler",
        bare["pod"]["spec"].get("schedulerName"),
        names.HAMI_SCHEDULER_NAME,
        failures,
    )
    check("CPU pod keeps its scheduler", cpu["pod"]["spec"].get("schedulerName"), None, failures)
    check("own lower class wins", classed["pod"]["spec"]["priorityClassName"], "gpushare-standard", failures)
    own_pool, own_pool_affinity, *other_pools = selecting
    admitted = (bare, annotated, cpu, classed, percent, own_pool, own_pool_affinity)
    check("fitting pods admitted", [r["denied"] for r in admitted], [[]] * len(admitted), failures)
    check(
        "class above the team's tier refused",
        [m.split(":")[0] for m in system_class["denied"]],
        ["priority must be at most 1000000, the critical tier of team inference"],
        failures,
    )
    other_pool = "gpushare.io/pool and karpenter.sh/nodepool may select only pools of team inference"
    check(
        "other pools refused (nodeSelector on both labels, affinity In, NotIn, Exists)",
        [any(m.startswith(other_pool) for m in r["denied"]) for r in other_pools],
        [True] * len(other_pools),
        failures,
    )
    gpu_toleration = [{"key": names.GPU_TAINT["key"], "operator": "Exists", "effect": names.GPU_TAINT["effect"]}]
    check("GPU pod gets the GPU pools' toleration", bare["pod"]["spec"].get("tolerations"), gpu_toleration, failures)
    check("own toleration kept, none added", tolerant["pod"]["spec"].get("tolerations"), tolerating, failures)
    check("CPU pod gets no toleration", cpu["pod"]["spec"].get("tolerations"), None, failures)
    check(
        "GPU pod without a pool goes to the team's one pool",
        (unselected["denied"], unselected["pod"]["spec"].get("nodeSelector")),
        ([], {names.POOL_LABEL: "g4dn-shared"}),
        failures,
    )
    several, only_a10g, only_shared = run(
        dev,
        "ml-research",
        [
            pod("ml-research", hami),
            pod("ml-research", {names.GPU: "1", names.GPU_MEMORY: "20000"}),
            pod("ml-research", {names.GPU_SHARED: "1"}),
        ],
    )
    check(
        "GPU pod two pools hold is refused without a pool",
        [m.split(":")[0] for m in several["denied"]],
        ["a pod asking GPUs must select its pool, one of team ml-research's (g5-shared, g4dn-shared, g6-timeslice)"],
        failures,
    )
    check(
        "only the A10G pool holds 20000 MiB",
        only_a10g["pod"]["spec"].get("nodeSelector"),
        {names.POOL_LABEL: "g5-shared"},
        failures,
    )
    check(
        "only the time-sliced pool holds a replica",
        only_shared["pod"]["spec"].get("nodeSelector"),
        {names.POOL_LABEL: "g6-timeslice"},
        failures,
    )
    check(
        "gpumem above one T4 refused",
        [m.split(":")[0] for m in too_big["denied"]],
        ["nvidia.com/gpumem per container must be at most 15360"],
        failures,
    )
    check(
        "init container counted",
        [m.split(":")[0] for m in init_too_big["denied"]],
        ["nvidia.com/gpucores per container must be at most 100"],
        failures,
    )

    spot_raw = read_stack_file(PROJECT_ROOT / "Pulumi.dev.yaml")
    spot_raw["gpushare:pools"][0]["capacityTypes"] = ["spot"]
    spot_raw["gpushare:teams"][0] |= {"pools": ["g5-shared"], "spotOnly": True}
    spot_raw["gpushare:teams"][0]["quota"]["gpuCores"] = 400
    # Only the HAMi pools: a time-sliced pool no team lists is refused, and so are replicas no pool provides.
    spot_raw["gpushare:pools"] = spot_raw["gpushare:pools"][:2]
    del spot_raw["gpushare:teams"][0]["quota"]["sharedGpus"]
    spot_raw["gpushare:teams"][1]["pools"] = ["g4dn-shared", "g5-shared"]
    batch, no_selector = run(
        load_stack_config(spot_raw, today=FIXED_PLAN_DAY),
        "ml-research",
        [pod("ml-research", hami, nodeSelector={names.POOL_LABEL: "g5-shared"}), pod("ml-research", hami)],
    )
    spec = batch["pod"]["spec"]
    check(
        "batch never preempts",
        (spec.get("priorityClassName"), spec.get("priority"), spec.get("preemptionPolicy")),
        ("gpushare-batch", 10_000, "Never"),
        failures,
    )
    check(
        "spot merged into nodeSelector",
        spec.get("nodeSelector"),
        {names.POOL_LABEL: "g5-shared", names.CAPACITY_TYPE_LABEL: "spot"},
        failures,
    )
    spot = {names.POOL_LABEL: "g5-shared", names.CAPACITY_TYPE_LABEL: "spot"}
    check("pool and spot added without a nodeSelector", no_selector["pod"]["spec"].get("nodeSelector"), spot, failures)
    for failure in failures:
        print(f"FAIL {failure}")
    print(f"admission: {'all cases pass' if not failures else f'{len(failures)} failing'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
