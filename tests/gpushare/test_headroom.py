"""Warm headroom (teams[].headroom): the domain functions that size it, every way config refuses it (one line naming
the key and the limit), and config and policy pack sizing a buffer alike."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpushare import names
from gpushare.capacity import (
    NodeShape,
    PodShape,
    cheapest_cover,
    cpu_millis,
    headroom_fits,
    headroom_pod_shape,
    memory_mib,
    pods_per_node,
    pods_within_share,
    stack_headroom,
)
from gpushare.catalog import load_catalog
from gpushare.errors import ConfigError
from gpushare.hami import SharingProfile, node_capacity
from gpushare.loader import load_stack_config
from policies.gpushare_policies.kube import pools
from policies.gpushare_policies.pools import pool_view
from policies.gpushare_policies.stack import from_plan
from tests.conftest import PLAN_DATE, raw_stack

CATALOG = load_catalog()


def _hami_node(instance_type: str) -> tuple[NodeShape, Any]:
    capacity = node_capacity(CATALOG, CATALOG.instance_type(instance_type), SharingProfile())
    return NodeShape(instance_type, capacity.resources()), capacity


def _pods(shape: PodShape, instance_type: str) -> tuple[int, int]:
    node, capacity = _hami_node(instance_type)
    itype = CATALOG.instance_type(instance_type)
    fit = pods_per_node(shape, node, capacity, itype.vcpu, itype.memory_mib)
    return fit.counted, fit.placed


def _vgpu(memory: int | None = None, cores: int | None = None, gpus: int = 1) -> PodShape:
    return headroom_pod_shape(gpus, memory, cores, 250, 512, names.SHARING_HAMI)


@pytest.mark.parametrize(
    ("shape", "instance_type", "counted", "placed"),
    [
        (_vgpu(7676, 33), "g5.xlarge", 3, 3),  # a third of an A10G, on a 1-GPU node both views agree
        (_vgpu(6000), "g4dn.12xlarge", 10, 8),  # 61440 / 6000 summed; 2 per T4 of 15360
        (_vgpu(5120), "g4dn.12xlarge", 12, 12),  # a third of a T4: no remainder to add up
        (_vgpu(cores=30, memory=4000), "g4dn.12xlarge", 13, 12),  # 400 / 30 summed; 3 per GPU
        (_vgpu(4000, 25, gpus=2), "g4dn.12xlarge", 15, 6),  # gpumem counted once per pod, asked on 2 GPUs
        (_vgpu(), "g4dn.12xlarge", 4, 4),  # no gpumem: the webhook's 100 cores make it a whole GPU each
        (_vgpu(4000, gpus=8), "g4dn.12xlarge", 5, 0),  # more vGPUs than the node has GPUs: HAMi never places it
    ],
)
def test_pods_per_node_as_karpenter_counts_and_as_hami_places(shape, instance_type, counted, placed):
    assert _pods(shape, instance_type) == (counted, placed)


def test_cpu_and_memory_bound_both_views():
    shape = headroom_pod_shape(1, 1000, 10, cpu_millis("2"), memory_mib("4Gi"), names.SHARING_HAMI)
    assert _pods(shape, "g5.xlarge") == (2, 2)  # 4 vCPUs, 16 GiB


def test_quantities_of_a_shape():
    assert [cpu_millis(t) for t in ("250m", "2", "0.5", "1.25")] == [250, 2000, 500, 1250]
    assert [memory_mib(t) for t in ("512Mi", "8Gi")] == [512, 8192]


def test_the_template_states_what_admission_gives_real_pods():
    assert headroom_pod_shape(1, None, None, 250, 512, names.SHARING_HAMI).gpu == {names.GPU: 1, names.GPU_CORES: 100}
    assert headroom_pod_shape(1, 4000, None, 250, 512, names.SHARING_HAMI).gpu == {names.GPU: 1, names.GPU_MEMORY: 4000}
    assert headroom_pod_shape(2, None, None, 250, 512, names.SHARING_EXCLUSIVE).gpu == {names.GPU: 2}
    assert headroom_pod_shape(1, None, None, 250, 512, names.SHARING_TIMESLICE).gpu == {names.GPU_SHARED: 1}


def test_cheapest_cover_mixes_whole_nodes():
    options = [("small", 3, 1.0), ("big", 12, 3.5)]
    assert cheapest_cover(options, 2) == (1.0, {"small": 1})
    assert cheapest_cover(options, 12) == (3.5, {"big": 1})
    assert cheapest_cover(options, 14) == (4.5, {"big": 1, "small": 1})
    assert cheapest_cover([("none", 0, 1.0)], 1) is None


def _cheapest_by_every_mix(sizes: list[tuple[int, int]], pods: int) -> int:
    """Reference: the least cost over every count of each type up to what alone would hold `pods`."""
    ranges = [range(-(-pods // size) + 1) for size, _ in sizes]
    return min(
        sum(n * cost for n, (_, cost) in zip(counts, sizes, strict=True))
        for counts in itertools.product(*ranges)
        if sum(n * size for n, (size, _) in zip(counts, sizes, strict=True)) >= pods
    )


@given(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 30)), min_size=1, max_size=3), st.integers(0, 40))
@settings(max_examples=200, deadline=None, database=None, derandomize=True)
def test_cheapest_cover_is_the_cheapest_mix_of_whole_nodes(sizes, pods):
    options = [(f"type{i}", size, cost) for i, (size, cost) in enumerate(sizes)]
    cost, nodes = cheapest_cover(options, pods) or (None, {})
    assert cost == _cheapest_by_every_mix(sizes, pods)
    held = {name: size for name, size, _ in options}
    assert sum(held[name] * count for name, count in nodes.items()) >= pods


def test_a_huge_count_is_filled_with_the_cheapest_type_per_pod():
    cost, nodes = cheapest_cover([("small", 3, 1.0), ("big", 12, 3.5)], 2_000_000_000) or (0.0, {})
    assert nodes["big"] >= 166_666_000 and cost == pytest.approx(166_666_667 * 3.5, rel=1e-6)


def test_a_share_of_the_quota_counts_every_resource_the_pod_asks():
    quota = {names.GPU: 200, names.GPU_MEMORY: 460_000, names.GPU_CORES: 2400}
    assert pods_within_share(quota, 10, _vgpu(7676, 33)) == 5  # 46000 MiB / 7676
    assert pods_within_share(quota, 1, _vgpu(7676, 33)) == 0


def test_prod_keeps_two_pods_on_one_g5_xlarge(prod):
    [headroom] = stack_headroom(prod)
    assert (headroom.team, headroom.pool, headroom.pods) == ("inference", "g5-shared", 2)
    assert {f.instance_type: f.placed for f in headroom_fits(prod, headroom)}["g5.xlarge"] == 3


def test_config_and_pack_count_warm_pods_alike(plans, prod):
    """The config sizes from the typed config, the pack from the plan's NodePool and HAMi release: same numbers."""
    view = from_plan(plans["prod"]["resources"], PLAN_DATE)
    sized = pool_view(view, next(p for p in pools(view) if p.name == "g5-shared"))
    assert sized is not None
    for shape in (_vgpu(7676, 33), _vgpu(6000), _vgpu(), _vgpu(3000, 20)):
        [headroom] = stack_headroom(prod)
        config_side = headroom_fits(prod, type(headroom)(**{**vars(headroom), "shape": shape}))
        assert sized.fits(shape) == config_side


Change = Callable[[dict[str, Any]], None]


def _headroom(**changes: Any) -> Change:
    """Set (or with None drop) keys of prod's inference headroom."""

    def change(raw: dict[str, Any]) -> None:
        headroom = raw["gpushare:teams"][1]["headroom"]
        for key, value in changes.items():
            target, _, leaf = key.rpartition(".")
            node = headroom
            for step in filter(None, target.split(".")):
                node = node.setdefault(step, {})
            if value is None:
                node.pop(leaf, None)
            else:
                node[leaf] = value

    return change


def _raw(path: str, value: Any) -> Change:
    def change(raw: dict[str, Any]) -> None:
        key, *steps = path.split(".")
        node = raw[key]
        for step in steps[:-1]:
            node = node[int(step)] if step.isdigit() else node[step]
        node[int(steps[-1]) if steps[-1].isdigit() else steps[-1]] = value

    return change


KEY = "gpushare:teams[1].headroom"
REFUSED = [
    ("neither pods nor quotaPercent", _headroom(pods=None), f"{KEY}.pods: neither of pods and quotaPercent set"),
    ("both pods and quotaPercent", _headroom(quotaPercent=10), f"{KEY}.pods: both of pods and quotaPercent set"),
    (
        "cores without memory",
        _headroom(**{"shape.gpuMemoryMib": None}),
        f"{KEY}.shape.gpuCores: 33 without gpuMemoryMib: HAMi gives such a vGPU a whole GPU's memory",
    ),
    (
        "pools left out for a team of two",
        _headroom(pools=None),
        f"{KEY}.pools: is required: team inference lists pools g5-shared, g6-shared",
    ),
    (
        "another team's pool",
        _headroom(pools=["training"]),
        f"{KEY}.pools[0]: 'training' is not a pool of team inference",
    ),
    (
        "override of a pool without headroom",
        _headroom(perPool={"g6-shared": {"pods": 1}}),
        f"{KEY}.perPool.g6-shared: overrides a pool that keeps no headroom; allowed: one of headroom.pools (g5-shared)",
    ),
    (
        "override with both sizes",
        _headroom(perPool={"g5-shared": {"pods": 1, "quotaPercent": 5}}),
        f"{KEY}.perPool.g5-shared.quotaPercent: 5 and pods 1 both set",
    ),
    (
        "Karpenter before CapacityBuffer",
        _raw("gpushare:karpenter.chartVersion", "1.13.1"),
        f"{KEY}: needs Karpenter's CapacityBuffer (autoscaling.x-k8s.io/v1beta1), which exists from chart 1.14.0, but "
        "gpushare:karpenter.chartVersion is 1.13.1",
    ),
    (
        "more memory than one GPU",
        _headroom(**{"shape.gpuMemoryMib": 30000}),
        f"{KEY}.shape.gpuMemoryMib: 30000 is more than pool g5-shared can give one pod (one GPU holds 23028 MiB); "
        "allowed: at most 23028",
    ),
    (
        "more vGPUs than a node has GPUs",
        _headroom(**{"shape.gpus": 2}),
        f"{KEY}.shape.gpus: 2 is more than pool g5-shared can give one pod (its largest node has 1 GPU(s), and each "
        "vGPU of a container takes a GPU of its own); allowed: at most 1",
    ),
    (
        "more CPU than a node",
        _headroom(**{"shape.cpu": "64"}),
        f"{KEY}.shape.cpu: 64 is more than pool g5-shared can give one pod (the vCPUs of its largest node); allowed: "
        "at most 32000m",
    ),
    (
        "a shape that fragments a 4-GPU node",
        lambda raw: (
            _headroom(**{"shape.gpuMemoryMib": 7000, "shape.gpuCores": 25})(raw),
            raw["gpushare:pools"][0]["instanceTypes"].append("g5.12xlarge"),
        ),
        f"{KEY}.shape: fragments the 4 GPUs of g5.12xlarge: Karpenter counts 13 warm pods per node from its summed "
        "capacity, HAMi places 12 (each vGPU on one GPU), so the buffer would look kept while real pods of this shape "
        "wait; allowed: a shape that fits each GPU a whole number of times (e.g. gpuMemoryMib 5757), or "
        "a pool of 1-GPU types",
    ),
    (
        "a share of the quota below one pod",
        _headroom(pods=None, quotaPercent=1),
        f"{KEY}.quotaPercent: holds no pod of the shape within that share of the team's quota",
    ),
    (
        "more than the quota admits",
        _headroom(pods=60),
        f"{KEY}.pods: 60 warm pods ask 460560 nvidia.com/gpumem, more than the team's quota.gpuMemoryMib 460000 "
        "admits: the real pods they stand for could never all run; allowed: at most 59 pods",
    ),
    (
        "more than the pool limit admits",
        lambda raw: (_headroom(pods=30)(raw), _raw("gpushare:pools.0.maxGpus", 8)(raw)),
        f"{KEY}.pods: 30 warm pods need whole nodes worth 100 nvidia.com/gpu, more than pool g5-shared's maxGpus 8 "
        "admits (80); allowed: at most 24 pods, or a larger maxGpus",
    ),
]


@pytest.mark.parametrize(("change", "expected"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_bad_headroom_names_the_key_and_the_limit(change, expected):
    raw = raw_stack("prod")
    change(raw)
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    lines = [line for line in str(caught.value).splitlines() if line.startswith(KEY)]
    assert any(line.startswith(expected) for line in lines), lines


def _exclusive_headroom(raw: dict[str, Any], shape: dict[str, Any]) -> None:
    """ml-research keeps headroom on the exclusive training pool."""
    raw["gpushare:teams"][0]["headroom"] = {"pods": 1, "shape": shape, "pools": ["training"]}


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        (
            {"gpus": 1, "gpuMemoryMib": 4000},
            "gpushare:teams[0].headroom.shape.gpuMemoryMib: 4000 is a HAMi resource, but pool training shares GPUs by "
            "exclusive, where a pod asks nvidia.com/gpu only; allowed: gpus, cpu and memory",
        ),
        (
            {"gpus": 16},
            "gpushare:teams[0].headroom.shape.gpus: 16 is more than pool training can give one pod (its largest node "
            "has 8 GPU(s), and whole GPUs); allowed: at most 8",
        ),
    ],
)
def test_exclusive_pools_keep_whole_gpus_warm(shape, expected):
    raw = raw_stack("prod")
    _exclusive_headroom(raw, shape)
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    assert expected in str(caught.value).splitlines()


def test_an_exclusive_pool_keeps_a_whole_gpu_node_warm():
    raw = raw_stack("prod")
    _exclusive_headroom(raw, {"gpus": 4})
    config = load_stack_config(raw, today=PLAN_DATE)
    [headroom] = [h for h in stack_headroom(config) if h.team == "ml-research"]
    assert headroom.shape.gpu == {names.GPU: 4}
    assert {f.instance_type: f.placed for f in headroom_fits(config, headroom)} == {
        "g6e.12xlarge": 1,
        "p4d.24xlarge": 2,
    }


def test_time_sliced_pools_keep_replicas_warm(dev_raw):
    dev_raw["gpushare:teams"][0]["headroom"] = {"pods": 4, "shape": {"gpus": 2}, "pools": ["g6-timeslice"]}
    with pytest.raises(ConfigError) as caught:
        load_stack_config(dev_raw, today=PLAN_DATE)
    assert str(caught.value).splitlines() == [
        "gpushare:teams[0].headroom.shape.gpus: 2 on time-sliced pool g6-timeslice: a container takes one replica "
        "(more add no compute and the NVIDIA device plugin refuses them); allowed: 1"
    ]
    dev_raw["gpushare:teams"][0]["headroom"]["shape"] = {"gpus": 1}
    [headroom] = stack_headroom(load_stack_config(dev_raw, today=PLAN_DATE))
    assert (headroom.pool, headroom.pods, headroom.shape.gpu) == ("g6-timeslice", 4, {names.GPU_SHARED: 1})


def test_a_per_pool_override_replaces_size_and_shape(prod_raw):
    prod_raw["gpushare:teams"][1]["headroom"] |= {
        "pools": ["g5-shared", "g6-shared"],
        "perPool": {"g6-shared": {"quotaPercent": 5, "shape": {"gpuMemoryMib": 11517, "gpuCores": 50}}},
    }
    by_pool = {h.pool: h for h in stack_headroom(load_stack_config(prod_raw, today=PLAN_DATE))}
    assert by_pool["g5-shared"].pods == 2 and by_pool["g5-shared"].size_key == "teams[1].headroom.pods"
    # 5% of 460000 MiB holds 1 pod of 11517 MiB; of 2400 cores, 2 of 50; of 200 vGPUs, 10: the fewest wins.
    assert by_pool["g6-shared"].pods == 1
    assert by_pool["g6-shared"].size_key == "teams[1].headroom.perPool.g6-shared.quotaPercent"
    assert by_pool["g6-shared"].shape.gpu == {names.GPU: 1, names.GPU_MEMORY: 11517, names.GPU_CORES: 50}


def test_teams_of_one_pool_need_not_name_it(dev_raw):
    dev_raw["gpushare:teams"][1]["headroom"] = {"pods": 2, "shape": {"gpuMemoryMib": 5120, "gpuCores": 33}}
    [headroom] = stack_headroom(load_stack_config(dev_raw, today=PLAN_DATE))
    assert (headroom.team, headroom.pool) == ("inference", "g4dn-shared")


def test_headroom_of_two_teams_beyond_a_pool_limit_names_the_pool(dev_raw):
    """A quarter of a T4 each: ml-research's 12 pods need 3 nodes, inference's 8 need 2; each fits g4dn-shared's 40
    vGPUs alone, together they need 50."""
    for index, pods in ((0, 12), (1, 8)):
        dev_raw["gpushare:teams"][index]["headroom"] = {
            "pods": pods,
            "shape": {"gpuMemoryMib": 3840, "gpuCores": 25},
            "pools": ["g4dn-shared"],
        }
    with pytest.raises(ConfigError) as caught:
        load_stack_config(dev_raw, today=PLAN_DATE)
    assert str(caught.value).splitlines() == [
        "gpushare:pools[1].maxGpus: 4: the headroom of teams ml-research, inference needs whole nodes worth 50 "
        "nvidia.com/gpu together, more than this limit admits (40); allowed: a larger maxGpus, or less headroom"
    ]
