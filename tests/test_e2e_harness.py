"""The offline cluster harness's pure parts: what it offers Karpenter and what its fake GPUs register."""

from __future__ import annotations

import json

import pytest

from e2e.build import BINARIES, TOOLS, pin_hash
from e2e.device_plugins import REGISTER_ANNOTATION, HamiDeviceConfig, NvidiaPluginConfig, register
from e2e.instance_types import ZONES, kwok_instance_types
from e2e.report import UPSTREAM_MODULES, versions
from e2e.stack import KWOK_NODE_CLASS, RIG_CONSOLIDATE_AFTER, Plan, for_rig, node_overlay_gate
from gpushare.capacity import pool_plans
from gpushare.catalog import load_catalog
from gpushare.config import StackConfig
from gpushare.hami import SharingProfile, node_capacity
from gpushare.render.hami import nvidia_device_plugin_values
from gpushare.render.karpenter import pool_labels

CATALOG = load_catalog()


def test_every_catalog_type_is_offered_in_every_zone_at_its_price() -> None:
    offered = {entry["name"]: entry for entry in kwok_instance_types(CATALOG)}
    assert set(offered) == set(CATALOG.instance_type_names)
    for itype in CATALOG.instance_types:
        entry = offered[itype.name]
        assert entry["resources"]["cpu"] == str(itype.vcpu)
        assert entry["resources"]["memory"] == f"{itype.memory_mib}Mi"
        assert entry["resources"].get("nvidia.com/gpu") == (str(itype.gpu_count) if itype.gpu_count else None)
        zones = [
            req["values"][0]
            for offering in entry["offerings"]
            for req in offering["Requirements"]
            if req["key"] == "topology.kubernetes.io/zone"
        ]
        assert zones == list(ZONES)
        assert {offering["Price"] for offering in entry["offerings"]} == {itype.on_demand_usd_per_hour}


def test_gpu_labels_ride_on_the_offerings() -> None:
    g5 = next(entry for entry in kwok_instance_types(CATALOG) if entry["name"] == "g5.12xlarge")
    labels = {req["key"]: req["values"][0] for req in g5["offerings"][0]["Requirements"]}
    assert labels["karpenter.k8s.aws/instance-gpu-count"] == "4"
    assert labels["karpenter.k8s.aws/instance-gpu-name"] == "a10g"
    assert labels["karpenter.k8s.aws/instance-family"] == "g5"


@pytest.mark.parametrize(
    ("values", "gpus", "nvml", "expected"),
    [
        ({}, 1, 23028, {"nvidia.com/gpu": 10, "nvidia.com/gpumem": 23028, "nvidia.com/gpucores": 100}),
        (
            {"devicePlugin": {"deviceSplitCount": 4, "deviceMemoryScaling": 0.5, "deviceCoreScaling": 0.5}},
            4,
            15360,
            {"nvidia.com/gpu": 16, "nvidia.com/gpumem": 4 * 7680, "nvidia.com/gpucores": 200},
        ),
    ],
)
def test_registration_follows_the_plugins(values: dict, gpus: int, nvml: int, expected: dict[str, int]) -> None:
    registration = register(HamiDeviceConfig.from_values(values), "node-a", gpus, nvml, "NVIDIA A10G")
    assert {key: registration.resources[key] for key in expected} == expected
    assert registration.resources["nvidia.com/gpumem-percentage"] == 100 * gpus
    devices = json.loads(registration.annotations[REGISTER_ANNOTATION])
    assert [device["index"] for device in devices] == list(range(gpus))
    assert len({device["id"] for device in devices}) == gpus


def test_renamed_resources_are_registered_under_the_values_names() -> None:
    config = HamiDeviceConfig.from_values({"resourceName": "example.com/vgpu", "resourceMem": "example.com/mem"})
    assert set(register(config, "n", 1, 15360, "T4").resources) >= {"example.com/vgpu", "example.com/mem"}


@pytest.mark.parametrize("itype", ["g4dn.xlarge", "g5.12xlarge", "g6e.xlarge"])
def test_stand_in_and_the_stack_model_agree_at_the_default_profile(itype: str) -> None:
    """The overlays come from gpushare.hami; the stand-in from the plugins' rules: the rig compares them."""
    instance = CATALOG.instance_type(itype)
    model = CATALOG.gpu_model_of(instance)
    registered = register(HamiDeviceConfig.from_values({}), "n", instance.gpu_count, model.nvml_memory_mib, "x")
    assert registered.resources == node_capacity(CATALOG, instance, SharingProfile()).resources()


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_nvidia_stand_in_registers_what_the_stack_model_plans(stack: str, request: pytest.FixtureRequest) -> None:
    """Exclusive and time-sliced pools: the stand-in reads the release values and the node labels; the overlays
    and limits come from gpushare.capacity."""
    config: StackConfig = request.getfixturevalue(stack)
    plugin = NvidiaPluginConfig.from_values(nvidia_device_plugin_values(config))
    plans = pool_plans(config)
    for pool in config.pools:
        labels = pool_labels(pool)
        assert plugin.runs_on(labels) == (pool.sharing != "hami"), pool.name
        if pool.sharing == "hami":
            continue
        for node in plans[pool.name].nodes:
            gpus = CATALOG.instance_type(node.instance_type).gpu_count
            registered = {resource: amount for resource, amount in node.resources.items() if amount}
            assert plugin.register(labels, gpus) == registered, (pool.name, node.instance_type)


def test_only_nodepools_change_for_the_rig() -> None:
    pool = {
        "kind": "NodePool",
        "metadata": {"name": "p"},
        "spec": {"template": {"spec": {"nodeClassRef": {"kind": "EC2NodeClass", "name": "gpu"}}}},
    }
    rig_pool = for_rig(pool)
    assert rig_pool["spec"]["template"]["spec"]["nodeClassRef"]["kind"] == KWOK_NODE_CLASS["kind"]
    assert rig_pool["spec"]["disruption"]["consolidateAfter"] == RIG_CONSOLIDATE_AFTER
    assert pool["spec"]["template"]["spec"]["nodeClassRef"]["kind"] == "EC2NodeClass"
    quota = {"kind": "ResourceQuota", "metadata": {"name": "q"}}
    assert for_rig(quota) is quota


def test_every_binary_is_built_from_a_pinned_module() -> None:
    for binary in BINARIES:
        assert (TOOLS / binary.module / "go.mod").exists()
        assert (TOOLS / binary.module / "go.sum").exists()
    assert set(versions()) == set(UPSTREAM_MODULES)
    assert len(pin_hash()) == 16


@pytest.mark.parametrize(("value", "text"), [(True, "true"), (False, "false"), ("true", "true")])
def test_rig_karpenter_gets_the_gate_text_the_chart_renders(value, text) -> None:
    plan = Plan("dev", (), {"karpenter": {"settings": {"featureGates": {"nodeOverlay": value}}}})
    assert node_overlay_gate(plan) == text
