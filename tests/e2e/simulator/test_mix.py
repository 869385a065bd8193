"""`make simulate`: the workload file and the comparison figures, without the rig."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.cluster.hami_values import HamiValues
from e2e.cluster.stack import load_plan
from e2e.simulator.mix import (
    RigNode,
    Workload,
    dearer_nodes,
    fractional_lower_bound,
    headroom_pods,
    load_workload,
    packing_bound,
    table,
    whole_gpu_cost,
    workload_problems,
)
from gpushare import names
from gpushare.catalog import load_catalog
from gpushare.errors import UserError
from gpushare.files import read_yaml
from gpushare.names import INSTANCE_TYPE_LABEL as INSTANCE_TYPE
from tests.conftest import ROOT, raw_stack

CATALOG = load_catalog()
MIX = ROOT / "examples" / "workloads" / "inference-mix.yaml"


def _hami(plans, stack: str) -> HamiValues:
    """The stack's HAMi release values as its offline plan renders them."""
    return HamiValues.from_values(load_plan(stack, plans[stack]["_folder"]).helm_values[names.HAMI_RELEASE])


def test_the_shipped_mix_is_60_pods_of_2_to_12_gib_on_pools_of_its_stack(plans):
    workload = load_workload(MIX)
    assert sum(group.count for group in workload.pods) == 60
    assert {group.gpu_memory_mib for group in workload.pods} <= set(range(2048, 12289))
    pools = {
        r["inputs"]["metadata"]["name"] for r in plans[workload.stack]["resources"] if r["type"].endswith(":NodePool")
    }
    assert {group.pool for group in workload.pods} <= pools


def test_bad_workload_lists_every_problem(tmp_path: Path):
    path = tmp_path / "w.yaml"
    path.write_text("stack: staging\npods:\n  - name: A\n    team: t\n    pool: p\n    count: 0\n")
    with pytest.raises(UserError) as caught:
        load_workload(path)
    lines = str(caught.value).splitlines()
    assert [line.split(": ")[1] for line in lines] == [
        "stack",
        "pods[0].name",
        "pods[0].count",
        "pods[0].gpuMemoryMib",
        "pods[0].gpuCores",
    ]


def _one(count: int, mib: int) -> Workload:
    group = {"name": "g", "team": "t", "pool": "p", "count": count, "gpuMemoryMib": mib, "gpuCores": 10}
    return Workload.model_validate({"stack": "dev", "pods": [group]})


def test_whole_gpu_cost_takes_the_cheapest_gpu_of_the_pool():
    pools = {"p": ["g5.xlarge", "g5.12xlarge"]}
    per_gpu = min(
        CATALOG.instance_type("g5.xlarge").on_demand_usd_per_hour,
        CATALOG.instance_type("g5.12xlarge").on_demand_usd_per_hour / 4,
    )
    assert whole_gpu_cost(CATALOG, pools, _one(10, 2048)) == round(10 * per_gpu, 3)


def test_lower_bound_is_below_whole_gpus_and_scales_with_memory():
    pools = {"p": ["g5.xlarge", "g5.12xlarge"]}
    small, large = _one(10, 2048), _one(10, 4096)
    assert fractional_lower_bound(CATALOG, pools, small) < whole_gpu_cost(CATALOG, pools, small)
    assert fractional_lower_bound(CATALOG, pools, large) == pytest.approx(
        2 * fractional_lower_bound(CATALOG, pools, small), abs=0.002
    )


def test_the_per_gpu_packing_bound_lies_between_the_fractional_bound_and_whole_gpus(plans):
    """The shipped mix: no packing beats the fractional bound, and sharing GPUs beats a GPU per pod."""
    workload = load_workload(MIX)
    pools = {
        r["inputs"]["metadata"]["name"]: next(
            q["values"] for q in r["inputs"]["spec"]["template"]["spec"]["requirements"] if q["key"] == INSTANCE_TYPE
        )
        for r in plans[workload.stack]["resources"]
        if r["type"].endswith(":NodePool")
    }
    best = packing_bound(CATALOG, pools, workload, _hami(plans, workload.stack))["usd_per_hour"]
    assert fractional_lower_bound(CATALOG, pools, workload) <= best < whole_gpu_cost(CATALOG, pools, workload)


def test_a_run_is_judged_against_the_proven_optimum_which_first_fit_misses_on_the_production_mix(plans):
    workload = load_workload(ROOT / "examples" / "workloads" / "production-mix.yaml")
    pools = {
        r["inputs"]["metadata"]["name"]: next(
            q["values"] for q in r["inputs"]["spec"]["template"]["spec"]["requirements"] if q["key"] == INSTANCE_TYPE
        )
        for r in plans[workload.stack]["resources"]
        if r["type"].endswith(":NodePool")
    }
    bound = packing_bound(CATALOG, pools, workload, _hami(plans, workload.stack))
    assert set(bound["optimum_status"].values()) == {"optimal"}
    assert bound["optimum_lower_bound_usd_per_hour"] == bound["optimum_usd_per_hour"] < bound["usd_per_hour"]
    run = {
        "stack": "prod",
        "pods": 70,
        "running": 70,
        "seconds_to_place": 40.0,
        "nodeclaims_launched": 30,
        "seconds_to_consolidate": 130.0,
        "consolidation_wait_s": {"stable": 60, "at_most": 600},
        "nodes_by_type": {"g5.8xlarge": 16},
        "usd_per_hour": round(bound["optimum_usd_per_hour"] * 1.5, 3),
        "by_pool": {},
        "dearer_nodes": [],
        "headroom_pods": {},
        "optimal_packing_without_headroom_usd_per_hour": bound["optimum_usd_per_hour"],
        "gpu_memory_used_percent": 80.0,
        "gpu_cores_used_percent": 80.0,
        "one_pod_per_whole_gpu_usd_per_hour": 66.396,
        "fractional_lower_bound_usd_per_hour": 10.0,
        "best_packing_usd_per_hour": bound["usd_per_hour"],
        "best_packing_nodes_by_type": bound["nodes_by_type"],
        "optimal_packing_usd_per_hour": bound["optimum_usd_per_hour"],
        "optimal_packing_lower_bound_usd_per_hour": bound["optimum_lower_bound_usd_per_hour"],
        "optimal_packing_nodes_by_type": bound["optimum_nodes_by_type"],
        "optimal_packing_status": bound["optimum_status"],
        "pending": [],
    }
    text = table(run)
    assert f"1.50x the optimum: ${bound['optimum_usd_per_hour']}/h" in text and "(proven optimal)" in text
    assert f"first-fit per GPU ${bound['usd_per_hour']}/h" in text
    assert "placed after 40 s, nodes consolidated after 130 s (then 60 s unchanged)" in text
    assert "nodes: 16 x g5.8xlarge (16 of the 30 NodeClaims Karpenter launched)" in text
    run["optimal_packing_status"] = {**bound["optimum_status"], "g6-shared": "feasible"}
    assert "not proven: g6-shared feasible; lower bound $" in table(run)
    run["seconds_to_consolidate"] = None
    assert "nodes still changing 600 s after the pods were placed" in table(run)


def test_the_optimum_counts_the_warm_headroom_the_stack_keeps(plans):
    """prod's inference team keeps two warm pods on g5-shared: the rig's Karpenter keeps a node for them, so the
    optimum packs them beside the mix (the shipped inference mix needs one g5.xlarge more with them)."""
    plan = load_plan("prod", plans["prod"]["_folder"])
    hami = _hami(plans, "prod")
    headroom = headroom_pods(plan, hami)
    assert {pool: len(pods) for pool, pods in headroom.items()} == {"g5-shared": 2}
    assert {(pod.gpu_memory_mib, pod.gpu_cores, pod.cpu_millis) for pod in headroom["g5-shared"]} == {(7676, 33, 1000)}
    workload, types = load_workload(MIX), plan.pool_instance_types()
    alone, beside = (
        packing_bound(CATALOG, types, workload, hami),
        packing_bound(CATALOG, types, workload, hami, headroom),
    )
    assert beside["optimum_nodes_by_type"]["g5.xlarge"] == alone["optimum_nodes_by_type"]["g5.xlarge"] + 1
    assert beside["optimum_by_pool"]["g6-shared"] == alone["optimum_by_pool"]["g6-shared"]


def _node(name: str, pods: int, karpenter: str = "", pool: str = "p") -> RigNode:
    return RigNode(name, pool, "g5.xlarge", pods, 4096 * pods, 23028, karpenter)


def test_a_pool_dearer_than_its_optimum_names_each_node_and_why():
    nodes = [
        _node("a", 0),
        _node("b", 3, "Unconsolidatable: node is not empty"),
        _node("c", 2),
        _node("d", 1, pool="q"),
    ]
    by_pool = {
        "p": {"usd_per_hour": 3.0, "optimum_usd_per_hour": 2.0},
        "q": {"usd_per_hour": 1.0, "optimum_usd_per_hour": 1.0},
    }
    found = {node["nodeclaim"]: node["why"] for node in dearer_nodes(nodes, by_pool, {"p": "WhenEmpty"})}
    assert found == {
        "a": "empty, and Karpenter had not removed it when the wait ended",
        "b": "Karpenter: Unconsolidatable: node is not empty",
        "c": "the pool's consolidationPolicy is WhenEmpty: Karpenter removes only empty nodes",
    }
    underutilized = dearer_nodes(nodes, by_pool, {"p": "WhenEmptyOrUnderutilized"})
    assert [node["why"] for node in underutilized if node["nodeclaim"] == "c"] == [
        "Karpenter said nothing about it (it found no cheaper consolidation)"
    ]


def _mix_problems(*groups: dict) -> list[str]:
    return workload_problems({"stack": "dev", "pods": list(groups)}, raw_stack("dev"))


GROUP = {"name": "g", "team": "inference", "pool": "g4dn-shared", "count": 2, "gpuMemoryMib": 2048, "gpuCores": 10}


def test_the_shipped_mix_has_no_problem_on_its_stack():
    raw = read_yaml(MIX)
    assert workload_problems(raw, raw_stack(raw["stack"])) == []


def test_a_mix_is_judged_against_its_stack_every_problem_at_once():
    """A schema error in one group hides neither another group's team nor what its pool can hold, nor a
    repeated name."""
    problems = _mix_problems(
        {**GROUP, "count": 0},
        {**GROUP, "name": "b", "team": "nobody"},
        {**GROUP, "name": "c", "gpuMemoryMib": 16000},
        {**GROUP, "name": "b"},
        {**GROUP, "name": "d", "team": "ml-research", "pool": "g6-timeslice"},
    )
    assert [line.split(": ")[0] for line in problems] == [
        "pods[0].count",
        "pods[3].name",
        "pods[1].team",
        "pods[2].gpuMemoryMib",
        "pods[4].pool",
    ]
    assert "more than any node of the pool offers (at most 15360 MiB per GPU" in problems[3]
    assert "g6-timeslice shares GPUs by timeslice; a fixed mix asks HAMi vGPUs" in problems[4]


def test_a_mix_group_within_its_pool_passes():
    assert _mix_problems(GROUP, {**GROUP, "name": "big", "gpuMemoryMib": 15360, "cpu": "7900m"}) == []
