"""examples/ runs on the dev stack as rendered: namespaces, quotas, taints, pools and per-GPU limits all agree."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import yaml

from gpushare import names
from gpushare.capacity import per_gpu_limits, pool_plans
from gpushare.render import tenancy
from tests.conftest import ROOT

EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
WORKLOADS = [
    pytest.param(doc, id=f"{path.name}:{doc['metadata']['name']}")
    for path in EXAMPLES
    for doc in yaml.safe_load_all(path.read_text())
]


def _pods(workload: dict[str, Any]) -> int:
    """How many pods of the workload run at once."""
    spec = workload["spec"]
    return spec.get("replicas", 1) if workload["kind"] == "Deployment" else spec.get("parallelism", 1)


def _limits(workload: dict[str, Any]) -> list[dict[str, str]]:
    return [c["resources"]["limits"] for c in workload["spec"]["template"]["spec"]["containers"]]


@pytest.fixture(scope="module")
def rendered(plans) -> dict[tuple[str, str], dict[str, Any]]:
    """The dev stack's Kubernetes objects as its offline plan declares them."""
    objects = (
        r for r in plans["dev"]["resources"] if r["type"].startswith("kubernetes:") and "metadata" in r["inputs"]
    )
    return {(r["type"].rsplit(":", 1)[-1], r["inputs"]["metadata"]["name"]): r["inputs"] for r in objects}


def test_examples_exist_for_every_seed_workload():
    assert {p.name for p in EXAMPLES} == {
        "gpu-inference.yaml",
        "scheduler-policies.yaml",
        "request-styles.yaml",
        "batch-job.yaml",
        "timeslice.yaml",
    }


@pytest.mark.parametrize("workload", WORKLOADS)
def test_workload_lands_on_a_pool_its_team_may_use(workload, rendered):
    namespace = rendered[("Namespace", workload["metadata"]["namespace"])]
    pod = workload["spec"]["template"]["spec"]
    pool = pod["nodeSelector"][names.POOL_LABEL]
    assert pool in namespace["metadata"]["annotations"][names.TEAM_POOLS_ANNOTATION].split(",")
    taint = rendered[("NodePool", pool)]["spec"]["template"]["spec"]["taints"][0]
    assert {**taint, "operator": "Equal"} in pod["tolerations"]


@pytest.mark.parametrize("workload", WORKLOADS)
def test_requests_fit_one_gpu_of_the_pool_and_have_quota_keys(workload, rendered, dev):
    pool = dev.pool(workload["spec"]["template"]["spec"]["nodeSelector"][names.POOL_LABEL])
    plan = pool_plans(dev)[pool.name]
    per_gpu = per_gpu_limits(plan.capacities)
    quota = rendered[("ResourceQuota", f"{workload['metadata']['namespace']}-gpu")]["spec"]["hard"]
    for limits in _limits(workload):
        if pool.sharing == names.SHARING_TIMESLICE:
            assert limits == {names.GPU_SHARED: "1"}, "a time-sliced pod asks one replica (more are refused)"
            assert f"requests.{names.GPU_SHARED}" in quota
            continue
        assert set(limits) <= set(tenancy.HAMI_RESOURCES)
        assert int(limits[names.GPU]) <= min(c.gpus for c in plan.capacities)
        for resource, amount in limits.items():
            assert int(amount) <= per_gpu.get(resource, int(amount)), f"{resource} {amount} exceeds one GPU"
            if resource != names.GPU_MEMORY_PERCENTAGE:
                assert f"requests.{resource}" in quota


def test_all_examples_together_fit_each_team_quota(rendered):
    used: dict[str, Counter[str]] = {}
    for param in WORKLOADS:
        workload = param.values[0]
        total = used.setdefault(workload["metadata"]["namespace"], Counter())
        for limits in _limits(workload):
            for resource, amount in limits.items():
                total[f"requests.{resource}"] += int(amount) * _pods(workload)
    for namespace, total in used.items():
        hard = rendered[("ResourceQuota", f"{namespace}-gpu")]["spec"]["hard"]
        assert all(total[key] <= int(limit) for key, limit in hard.items()), (namespace, total, hard)


def test_scheduler_policy_examples_cover_the_four_modes():
    [path] = [p for p in EXAMPLES if p.name == "scheduler-policies.yaml"]
    modes = {
        (a[names.HAMI_NODE_POLICY_ANNOTATION], a[names.HAMI_GPU_POLICY_ANNOTATION])
        for doc in yaml.safe_load_all(path.read_text())
        for a in [doc["spec"]["template"]["metadata"]["annotations"]]
    }
    assert modes == {(n, g) for n in ("binpack", "spread") for g in ("binpack", "spread")}


def test_request_styles_cover_memory_percentage_cores_and_pool_choice():
    [path] = [p for p in EXAMPLES if p.name == "request-styles.yaml"]
    docs = list(yaml.safe_load_all(path.read_text()))
    asked = {r for doc in docs for limits in _limits(doc) for r in limits}
    assert {names.GPU_MEMORY, names.GPU_MEMORY_PERCENTAGE, names.GPU_CORES} <= asked
    assert len({doc["spec"]["template"]["spec"]["nodeSelector"][names.POOL_LABEL] for doc in docs}) > 1


def test_batch_job_runs_in_a_batch_team(dev):
    [path] = [p for p in EXAMPLES if p.name == "batch-job.yaml"]
    [job] = yaml.safe_load_all(path.read_text())
    assert job["kind"] == "Job"
    assert next(t for t in dev.teams if t.name == job["metadata"]["namespace"]).priority == "batch"
