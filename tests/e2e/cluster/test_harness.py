"""The offline cluster harness's pure parts: what it offers Karpenter and what its fake GPUs register."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from croniter import croniter

from e2e.cluster import build
from e2e.cluster.build import BINARIES, TOOLS, module_cache, pin_hash
from e2e.cluster.device_plugins import NvidiaPluginConfig
from e2e.cluster.errors import RigError
from e2e.cluster.hami_values import HamiValues
from e2e.cluster.instance_types import ZONES, kwok_instance_types
from e2e.cluster.stack import (
    KWOK_NODE_CLASS,
    RIG_CONSOLIDATE_AFTER,
    Plan,
    budget_duration,
    daily_window,
    feature_gates,
    for_rig,
    load_plan,
    rig_nodepool_name,
)
from e2e.suites.report import UPSTREAM_MODULES, karpenter_deviation, versions
from gpushare import names, pins
from gpushare.capacity import pool_plans
from gpushare.catalog import load_catalog
from gpushare.config import StackConfig
from gpushare.render.hami import nvidia_device_plugin_values
from gpushare.render.karpenter import pool_labels
from tests.conftest import raw_stack

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


def _release(stack: str) -> HamiValues:
    return HamiValues.from_values(load_plan(stack, PLANS[stack]).helm_values[names.HAMI_RELEASE])


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_device_config_carries_the_stacks_sharing_profile(_plans: None, stack: str) -> None:
    """HAMi's scheduler, its device plugin stand-in and the real mock read the device ConfigMap the chart writes
    from `device-config.content`: the stack's profile, not the chart's defaults."""
    profile = raw_stack(stack)["gpushare:hami"]["profile"]
    release = _release(stack)
    nvidia = release.device_config()["nvidia"]
    assert {key: nvidia[key] for key in ("deviceSplitCount", "deviceMemoryScaling", "deviceCoreScaling")} == {
        key: profile[key] for key in ("deviceSplitCount", "deviceMemoryScaling", "deviceCoreScaling")
    }
    assert (release.split_count, release.memory_scaling) == (
        profile["deviceSplitCount"],
        profile["deviceMemoryScaling"],
    )
    assert nvidia["resourceCountName"] == names.GPU == release.resource_name
    assert nvidia["resourceMemoryName"] == names.GPU_MEMORY == release.resource_mem
    assert release.memory_factor == nvidia["memoryFactor"] == 1


def test_values_without_what_the_stack_always_renders_are_refused_by_name() -> None:
    with pytest.raises(RigError, match=r"lack resourceMem, schedulerName, device-config\.content"):
        HamiValues.from_values(
            {"resourceName": "a", "resourceCores": "b", "resourceMemPercentage": "c", "device-config": {}}
        )


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


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_rig_runs_each_nodepool_under_a_short_unique_name_its_overlays_follow(_plans: None, stack: str) -> None:
    """KWOK's node names leave a pool's name five characters (e2e.cluster.tenants): each shipped NodePool runs under
    a distinct short name, and every overlay that selects a NodePool by name selects it under that name."""
    plan = load_plan(stack, PLANS[stack])
    started = TUESDAY_16_UTC
    rig_names = {p["metadata"]["name"]: for_rig(p, started)["metadata"]["name"] for p in plan.of_kind("NodePool")}
    assert len(set(rig_names.values())) == len(rig_names)
    assert all(len(name) <= 5 for name in rig_names.values())
    assert any(name != rig_names[name] for name in rig_names)
    selected = set()
    for overlay in plan.of_kind("NodeOverlay"):
        for requirement in for_rig(overlay, started)["spec"]["requirements"]:
            if requirement["key"] == names.NODEPOOL_LABEL:
                selected |= set(requirement["values"])
    assert selected and selected <= set(rig_names.values())
    assert rig_nodepool_name("s0p0") == "s0p0"


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
def _plans(plans: dict[str, dict[str, Any]]) -> None:
    """The shipped stacks' plan folders: the same `make plan` for the same day as the rig's write_plan runs."""
    for stack in ("dev", "prod"):
        PLANS[stack] = plans[stack]["_folder"]


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


def test_a_new_build_flag_rebuilds_only_its_module(monkeypatch: pytest.MonkeyPatch) -> None:
    before = {module: module_cache(module) for module in ("prometheus", "kube")}
    untagged = tuple(replace(b, tags="") if b.name == "prometheus" else b for b in BINARIES)
    assert untagged != BINARIES
    monkeypatch.setattr(build, "BINARIES", untagged)
    assert module_cache("prometheus") != before["prometheus"]
    assert module_cache("kube") == before["kube"]


def test_rig_applies_the_crds_of_the_provider_release_the_stack_pins() -> None:
    assert versions()["github.com/aws/karpenter-provider-aws"] == "v" + pins.chart_version("karpenter")


def test_report_names_the_core_the_rig_runs_and_the_provider_the_stack_pins() -> None:
    line = karpenter_deviation({"sigs.k8s.io/karpenter": "v1.0.0", "github.com/aws/karpenter-provider-aws": "v1.0.2"})
    assert "core runs at v1.0.0" in line
    assert "karpenter-provider-aws v1.0.2" in line
    assert f"chart {pins.chart_version('karpenter')}" in line


@pytest.mark.parametrize(("value", "text"), [(True, "true"), (False, "false"), ("true", "true")])
def test_rig_karpenter_gets_the_gate_text_the_chart_renders(value, text) -> None:
    plan = Plan("dev", (), {"karpenter": {"settings": {"featureGates": {"nodeOverlay": value}}}})
    assert feature_gates(plan) == {"NodeOverlay": text}


def test_rig_karpenter_gets_every_gate_the_stack_sets(_plans: None) -> None:
    """prod keeps warm headroom: its values turn the CapacityBuffer gate on beside NodeOverlay."""
    assert feature_gates(load_plan("prod", PLANS["prod"])) == {"CapacityBuffer": "true", "NodeOverlay": "true"}
    assert feature_gates(load_plan("dev", PLANS["dev"])).get("CapacityBuffer", "false") == "false"
