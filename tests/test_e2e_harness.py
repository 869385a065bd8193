"""The offline cluster harness's pure parts: what it offers Karpenter and what its fake GPUs register."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from croniter import croniter

from e2e.build import BINARIES, TOOLS, pin_hash
from e2e.device_plugins import REGISTER_ANNOTATION, HamiDeviceConfig, NvidiaPluginConfig, register
from e2e.instance_types import ZONES, kwok_instance_types
from e2e.report import UPSTREAM_MODULES, versions
from e2e.stack import (
    KWOK_NODE_CLASS,
    RIG_CONSOLIDATE_AFTER,
    Plan,
    budget_duration,
    daily_window,
    for_rig,
    load_plan,
    node_overlay_gate,
    write_plan,
)
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
    rig_pool = for_rig(pool, TUESDAY_16_UTC)
    assert rig_pool["spec"]["template"]["spec"]["nodeClassRef"]["kind"] == KWOK_NODE_CLASS["kind"]
    assert rig_pool["spec"]["disruption"]["consolidateAfter"] == RIG_CONSOLIDATE_AFTER
    assert pool["spec"]["template"]["spec"]["nodeClassRef"]["kind"] == "EC2NodeClass"
    quota = {"kind": "ResourceQuota", "metadata": {"name": "q"}}
    assert for_rig(quota, TUESDAY_16_UTC) is quota


# A day's run of the whole suite (make e2e plus make simulate) stays far below this.
RUN_BOUND = timedelta(hours=3)
TUESDAY_16_UTC = datetime(2026, 11, 24, 16, 0, tzinfo=UTC)
WEDNESDAY_03_UTC = datetime(2026, 11, 25, 3, 0, tzinfo=UTC)
SATURDAY_2359_UTC = datetime(2026, 11, 28, 23, 59, tzinfo=UTC)


def _active(budget: dict, at: datetime) -> bool:
    """Karpenter's reading of a budget window: the schedule's last hit at or before `at`, plus the duration, is
    after `at` (a budget without a schedule is always active). croniter stands in for robfig/cron here."""
    if "schedule" not in budget:
        return True
    last = croniter(budget["schedule"], at + timedelta(seconds=1)).get_prev(datetime)
    return last + budget_duration(budget["duration"]) > at


def _minutes(start: datetime, length: timedelta) -> list[datetime]:
    return [start + timedelta(minutes=m) for m in range(int(length.total_seconds() // 60) + 1)]


def _nodepools(stack: str) -> list[dict]:
    return [obj for obj in load_plan(stack, PLANS[stack]).objects if obj["kind"] == "NodePool"]


@pytest.fixture(scope="module")
def _plans(tmp_path_factory: pytest.TempPathFactory) -> None:
    out = tmp_path_factory.mktemp("plans")
    for stack in ("dev", "prod"):
        PLANS[stack] = write_plan(stack, out)


PLANS: dict[str, Path] = {}


def test_the_dev_stack_budget_blocks_consolidation_on_weekday_afternoons(_plans: None) -> None:
    """The fault the rig must not inherit: the shipped g4dn-shared budget is a nodes: 0 window at 16:00 UTC on a
    weekday, not at 03:00."""
    [pool] = [p for p in _nodepools("dev") if p["metadata"]["name"] == "g4dn-shared"]
    blocking = [b for b in pool["spec"]["disruption"]["budgets"] if b["nodes"] == "0"]
    assert any(_active(b, TUESDAY_16_UTC) for b in blocking)
    assert not any(_active(b, WEDNESDAY_03_UTC) for b in blocking)


@pytest.mark.parametrize("started", [TUESDAY_16_UTC, WEDNESDAY_03_UTC, SATURDAY_2359_UTC])
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_no_scheduled_budget_is_in_force_during_a_rig_run(_plans: None, stack: str, started: datetime) -> None:
    """Whatever hour and weekday the rig starts at, every scheduled budget of the rig's NodePools stays closed for
    the whole run: only the always-on budgets (the stack's `nodes: 1` and the like) apply."""
    for pool in _nodepools(stack):
        for budget in for_rig(pool, started)["spec"]["disruption"].get("budgets", []):
            if "schedule" in budget:
                open_at = [t for t in _minutes(started, RUN_BOUND) if _active(budget, t)]
                assert not open_at, (pool["metadata"]["name"], budget, open_at[:1])


def test_the_budget_scenario_windows_cover_now_and_miss_it() -> None:
    now = TUESDAY_16_UTC + timedelta(minutes=7)
    covering = {"nodes": "0", **daily_window(now - timedelta(hours=1), timedelta(hours=3))}
    away = {"nodes": "0", **daily_window(now + timedelta(hours=12), timedelta(hours=1))}
    assert all(_active(covering, t) for t in _minutes(now, timedelta(minutes=30)))
    assert not any(_active(away, t) for t in _minutes(now, timedelta(minutes=30)))


@pytest.mark.parametrize(("text", "minutes"), [("9h", 540), ("90m", 90), ("1h30m", 90), ("2h0s", 120)])
def test_budget_durations_read_as_karpenter_writes_them(text: str, minutes: int) -> None:
    assert budget_duration(text) == timedelta(minutes=minutes)


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
