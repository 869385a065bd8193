"""A simulated day's NodePools and workloads as the rig runs them, and its figures from synthetic records (no
rig)."""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from e2e.cluster.hami_values import HamiValues
from e2e.cluster.invariants import HAMI_NODE
from e2e.cluster.kwok_stages import COMPLETE_AFTER
from e2e.cluster.stack import Plan, load_plan
from e2e.cluster.workloads import HAMI_BIND_PHASE
from e2e.simulator.budgets import Window
from e2e.simulator.day import (
    RIG_ARMS,
    ClaimRecord,
    Day,
    Observations,
    PodRecord,
    Sample,
    _started,
    compress_pool,
)
from e2e.simulator.demand import Demand
from e2e.simulator.figures import (
    BOOT_S,
    PLACEMENT_FLOOR_S,
    PLACEMENT_RATE_PER_S,
    billed_claims,
    percentile,
    run_document,
    too_fast,
)
from e2e.simulator.mix import load_simulation
from e2e.simulator.oracle import Pools, day_bounds
from e2e.simulator.trace import Trace, load_trace
from gpushare import names
from gpushare.catalog import load_catalog
from tests.conftest import ROOT

WORKLOADS = ROOT / "examples" / "workloads"

STARTED = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
CHAT = {"name": "chat", "team": "inference", "pool": "g4dn-shared", "gpuMemoryMib": 1536, "gpuCores": 10}
EMBED = {"name": "embed", "team": "ml-research", "pool": "g5-shared", "gpuMemoryMib": 8192, "gpuCores": 50}


def _demand(**changes: Any) -> Demand:
    base = {"stack": "dev", "deployments": [{**CHAT, "replicas": {"00:00": 2, "12:00": 12}}]}
    return Trace.model_validate({**base, **changes}).demand()


def _pool(disruption: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "NodePool",
        "metadata": {"name": "p"},
        "spec": {
            "template": {"metadata": {"labels": {}}, "spec": {"expireAfter": "720h", "requirements": []}},
            "disruption": disruption,
        },
    }


def test_consolidate_after_and_expiry_scale_with_the_day():
    pool, notes, windows, switches = compress_pool(
        _pool({"consolidationPolicy": "WhenEmpty", "consolidateAfter": "10m"}), STARTED, _demand()
    )
    assert pool["spec"]["disruption"]["consolidateAfter"] == "3s"  # 10 simulated minutes at 20 s per hour
    assert pool["spec"]["template"]["spec"]["expireAfter"] == "14400s"
    assert pool["spec"]["template"]["spec"]["nodeClassRef"]["kind"] == "KWOKNodeClass"
    assert (windows, switches) == ([], [])
    assert len(notes) == 2


def test_budget_windows_are_switched_by_the_rig_at_their_exact_minutes():
    """dev's `0 15 * * mon-fri` for 9h on a Wednesday: the zero-node budget is in force from 15:00 to 24:00, set by
    the rig (no schedule left for Karpenter's whole-minute cron to round)."""
    budgets = [{"nodes": "0", "schedule": "0 15 * * mon-fri", "duration": "9h"}, {"nodes": "1"}]
    pool, notes, [window], switches = compress_pool(_pool({"budgets": budgets}), STARTED, _demand())
    assert pool["spec"]["disruption"]["budgets"] == [{"nodes": "1"}]  # at 00:00
    assert (window.start_minute, window.end_minute) == (900, 1440)
    assert [(s.minute, s.budgets) for s in switches] == [(900, [{"nodes": "1"}, {"nodes": "0"}])]
    assert "switched by the rig at simulated 15:00-24:00" in notes[-1]


def test_an_overnight_window_is_in_force_at_midnight_and_switched_off_at_its_end():
    budgets = [{"nodes": "0", "schedule": "0 22 * * *", "duration": "8h", "reasons": ["Underutilized"]}]
    pool, _, windows, switches = compress_pool(_pool({"budgets": budgets}), STARTED, _demand())
    assert pool["spec"]["disruption"]["budgets"] == [{"nodes": "0", "reasons": ["Underutilized"]}]
    assert [(w.start_minute, w.end_minute) for w in windows] == [(-120, 360), (1320, 1800)]
    assert [(s.minute, len(s.budgets)) for s in switches] == [(360, 0), (1320, 1)]


def test_a_budget_closed_on_the_days_weekday_never_switches_on():
    budgets = [{"nodes": "0", "schedule": "0 15 * * mon-fri", "duration": "9h"}]
    demand = Trace.model_validate(
        {"stack": "dev", "weekday": "sat", "deployments": [{**CHAT, "replicas": {"00:00": 1}}]}
    ).demand()
    pool, _, windows, switches = compress_pool(_pool({"budgets": budgets}), STARTED, demand)
    assert (pool["spec"]["disruption"]["budgets"], windows, switches) == ([], [], [])


def test_percentile_is_nearest_rank():
    assert [percentile([4, 1, 3, 2], share) for share in (0.25, 0.5, 0.95, 1)] == [1, 2, 4, 4]


@pytest.fixture(scope="module")
def dev(plans) -> tuple[Plan, Pools]:
    plan = load_plan("dev", plans["dev"]["_folder"])
    return plan, Pools(plan, load_catalog(), HamiValues.from_values(plan.helm_values[names.HAMI_RELEASE]))


def _day(plan: Plan, demand: Demand) -> Day:
    return Day(SimpleNamespace(hami=HamiValues.from_values(plan.helm_values[names.HAMI_RELEASE])), demand, plan)


def test_a_batch_is_an_indexed_job_whose_pods_each_run_their_own_duration(dev):
    plan, _ = dev
    demand = _demand(jobs=[{**EMBED, "arrivals": [{"at": "01:00", "count": 3, "durationMinutes": 90}]}])
    job = _day(plan, demand).job(demand.batches[0])
    spec = job["spec"]
    assert (spec["completions"], spec["parallelism"], spec["completionMode"]) == (3, 3, "Indexed")
    # Each pod waits for the rig to set its completion when it starts (e2e.simulator.day Day._arm).
    assert spec["template"]["metadata"]["annotations"] == {COMPLETE_AFTER: RIG_ARMS}
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    # An evicted pod is replaced, not counted as a failure.
    assert spec["podFailurePolicy"]["rules"] == [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}
    ]
    limits = spec["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits[names.GPU_MEMORY] == "8192"


def test_a_time_sliced_group_asks_replicas_and_an_exclusive_one_whole_gpus(dev):
    plan, _ = dev
    notebook = {"name": "nb", "team": "ml-research", "pool": "g6-timeslice", "replicas": {"00:00": 1}}
    demand = Trace.model_validate({"stack": "dev", "deployments": [notebook]}).demand()
    body = _day(plan, demand).deployment("nb", demand.groups[0], 1)
    assert body["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {names.GPU_SHARED: "1"}


# A synthetic two-hour day at 20 s per simulated hour: simulated minute m is real second 1000 + m / 3.
START = 1000.0


def _at(minute: float) -> float:
    return START + minute / 3


def _pod(uid: str, group: str, created: float, running: float | None, node: str | None, **more: Any) -> PodRecord:
    team = "inference" if group == "chat" else "ml-research"
    return PodRecord(
        uid, f"{group}-{uid}", more.pop("app", group), team, group, "", "hami", created, running, node, **more
    )


def _seen() -> Observations:
    """Node a ran before the clock and went after its chat pod left at 01:00; node b was launched for a chat pod
    still running at the horizon; node c was launched and never used; node d held only a batch pod when the day
    ended and went 20 minutes later. One batch pod never ran, one workload was refused at admission."""
    seen = Observations(START, run_end=_at(150))
    seen.claims = {
        "a": ClaimRecord("a", "g4dn.xlarge", "g4dn-shared", _at(-20), _at(-15), _at(90), "Empty", "node-a"),
        "b": ClaimRecord("b", "g4dn.xlarge", "g4dn-shared", _at(30), _at(33), None, "", "node-b"),
        "c": ClaimRecord("c", "g4dn.xlarge", "g4dn-shared", _at(36), None, _at(60), "Empty", "node-c"),
        "d": ClaimRecord("d", "g5.xlarge", "g5-shared", _at(60), _at(63), _at(140), "Empty", "node-d"),
    }
    seen.pods = {
        "1": _pod("1", "chat", _at(-21), _at(-12), "node-a", gone=_at(60)),
        "2": _pod("2", "chat", _at(27), _at(45), "node-b"),
        "3": _pod("3", "embed", _at(59), _at(66), "node-d", app="embed-0059", index=0, gone=_at(130)),
        "4": _pod("4", "embed", _at(59), None, None, app="embed-0059", index=1, pending_message="node-d is locked"),
    }
    seen.samples = [Sample(_at(50), {"chat": 2}, 1)]
    seen.windows = [Window("g4dn-shared", 30.0, 60.0, {"nodes": "0"})]
    seen.consolidate_after_s = {"g4dn-shared": 3.0, "g5-shared": 3.0}
    seen.consolidate_after_minutes = {"g4dn-shared": 10.0, "g5-shared": 10.0}
    event = {"namespace": "inference", "kind": "Pod", "name": "chat-1", "uid": "1", "source": "karpenter"}
    seen.events = [
        {**event, "reason": "Evicted", "message": "Evicted pod: Empty", "at": _at(45)},
        {**event, "reason": "Evicted", "message": "Evicted pod: Underutilized", "at": _at(75)},
        *(
            {**event, "kind": "Job", "name": "embed-0059", "uid": "j", "reason": "FailedCreate", "at": _at(59)}
            | {
                "message": 'pods "embed-0059-x" is forbidden: exceeded quota: q, requested: a=1, used: a=3, '
                "limited: a=3"
            }
            for _ in range(40)
        ),
    ]
    seen.wall_seconds = 60
    return seen


def _synthetic_demand() -> Demand:
    return Trace.model_validate(
        {
            "stack": "dev",
            "hours": 2,
            "deployments": [{**CHAT, "replicas": {"00:00": 1, "00:27": 2}}],
            "jobs": [{**EMBED, "arrivals": [{"at": "00:59", "count": 2, "durationMinutes": 30}]}],
        }
    ).demand()


def _bills() -> dict[str, Any]:
    return {bill.claim.name: bill for bill in billed_claims(_synthetic_demand(), _seen())}


def test_the_raw_bill_runs_from_creation_to_deletion_within_the_day():
    bills = _bills()
    assert bills["a"].raw == (0.0, pytest.approx(90))  # launched before the clock: billed from 00:00
    assert bills["b"].raw == (pytest.approx(30), pytest.approx(120))  # a chat pod at the horizon: billed to it
    assert bills["c"].raw == (pytest.approx(36), pytest.approx(60))
    # Only a batch pod on it at the horizon: its late batch and its teardown are the run's own, billed to the end.
    assert bills["d"].raw == (pytest.approx(60), pytest.approx(140))


def test_the_corrected_bill_retimes_each_node_as_the_day_would_run_at_full_scale():
    bills = _bills()
    # Node b: asked for by a chat pod at 00:27, launched a real second later; its pod ran 5 real seconds after that
    # (15 simulated minutes in the raw bill). At full scale it launches at 00:27 plus that second.
    assert bills["b"].launch_wait_s == pytest.approx(5.0)
    assert bills["b"].corrected == (pytest.approx(27 + 1 / 60), pytest.approx(120))
    # Node a: its pod left at 01:00; it went 10 real seconds later, of which 3 were the rig's consolidateAfter: it
    # goes consolidateAfter as designed (10 minutes) plus the 7 real seconds Karpenter took beyond it.
    assert bills["a"].teardown_wait_s == pytest.approx(7.0)
    assert bills["a"].corrected == (0.0, pytest.approx(60 + 10 + 7 / 60))
    # Node c never held a pod: boot, its wait to go and consolidateAfter as designed.
    assert bills["c"].corrected == (pytest.approx(36), pytest.approx(36 + BOOT_S / 60 + 5 / 60 + 10))
    # Node d: its job pod (asked 00:59) waited 7 real seconds and the boot, then ran its 64 simulated minutes; the
    # node went 10 minutes and a third of a real second after it.
    began = 59 + (7 / 3 + BOOT_S) / 60
    assert bills["d"].corrected == (pytest.approx(59 + 1 / 180), pytest.approx(began + 64 + 10 + 1 / 180))


def test_an_underused_node_goes_consolidate_after_its_last_change_plus_karpenters_real_wait():
    """Node e held two chat pods; one left at 01:00, Karpenter held it consolidatable from 3 real seconds later (the
    rig's consolidateAfter) and removed it 20 real seconds after that, the other pod still on it."""
    seen = _seen()
    seen.claims = {
        "e": ClaimRecord("e", "g4dn.xlarge", "g4dn-shared", _at(0), _at(1), _at(60) + 23, "Underutilized", "node-e")
    }
    seen.claims["e"].consolidatable = _at(60) + 3
    seen.pods = {
        "5": _pod("5", "chat", _at(-1), _at(2), "node-e", gone=_at(60)),
        "6": _pod("6", "chat", _at(-1), _at(2), "node-e", gone=_at(60) + 24),
    }
    [bill] = billed_claims(_synthetic_demand(), seen)
    assert bill.teardown_wait_s == pytest.approx(20)
    assert bill.corrected[1] == pytest.approx(60 + 10 + 20 / 60)


def test_the_run_document_from_synthetic_records(dev):
    _, pools = dev
    demand = _synthetic_demand()
    bounds = day_bounds(demand, pools)
    document = run_document(demand, _seen(), pools, bounds, {"trace": "t.yaml", "variant": "stack", "run": 1})
    cost = document["cost"]
    assert cost["oracle_usd"] == pytest.approx(sum(bounds.usd("oracle").values()), abs=0.001)
    assert cost["policy_usd"] >= cost["oracle_usd"]
    assert {pool["oracle_unproven_minutes"] for pool in cost["by_pool"].values()} == {0.0}
    assert cost["compression_usd"] == pytest.approx(cost["usd"] - cost["corrected_usd"], abs=0.002)
    assert document["horizon_hours"] == 2
    assert document["disruption_settings"]["g4dn-shared"] == {
        "consolidate_after_minutes": 10.0,
        "rig_consolidate_after_s": 3.0,
    }
    [sample] = document["timeline"]
    assert (sample["nodes"], sample["gpu_memory_used_mib"]) == (3, 2 * 1536)  # a, b and the unused c
    assert document["disruptions"] == {
        "by_cause": {"Empty": 1, "Underutilized": 1},
        "in_budget_window": {"inference": 1, "ml-research": 0},
    }
    assert document["nodeclaims"] == {"launched": 4, "consolidated": 3, "by_reason": {"Empty": 3}}


def test_the_tail_after_the_horizon_is_billed_on_both_sides_and_shown_apart(dev):
    """Node d held only a batch pod at the horizon (02:00) and went at 02:20: the run bills those 20 minutes; the
    oracle's job ended within the day, so its tail is nothing. Both spans sum to the whole on both sides, and the
    bill ends where the rig stopped watching (02:30)."""
    _, pools = dev
    demand = _synthetic_demand()
    document = run_document(demand, _seen(), pools, day_bounds(demand, pools), {})
    cost, g5 = document["cost"], load_catalog().instance_type("g5.xlarge").on_demand_usd_per_hour
    assert cost["tail"]["usd"] == pytest.approx(g5 * 20 / 60, abs=0.001)
    assert cost["tail"]["oracle_usd"] == 0.0
    assert cost["tail"]["hours"] == pytest.approx(0.5)
    assert document["billed_end_hours"] == pytest.approx(2.5)
    for key in ("usd", "corrected_usd", "oracle_usd", "policy_usd"):
        assert cost["within_day"][key] + cost["tail"][key] == pytest.approx(cost[key], abs=0.002)
    assert cost["within_day"]["corrected_ratio"] == pytest.approx(
        cost["within_day"]["corrected_usd"] / cost["within_day"]["oracle_usd"], abs=0.001
    )


def test_pods_are_counted_not_events(dev):
    """40 FailedCreate events of one Job are one refused workload; its pod that never ran is one pod."""
    _, pools = dev
    demand = _synthetic_demand()
    document = run_document(demand, _seen(), pools, day_bounds(demand, pools), {})
    assert document["pods"]["by_group"]["embed"] == {
        "asked": 2,
        "served": 1,
        "refused": 0,
        "never_placed": 1,
        "quota_refused_by_design": 0,
        "quota_delayed_by_design": 0,
    }
    assert document["pods"]["by_group"]["chat"]["served"] == 2
    assert document["never_ran"] == [
        {"refused_by": "hami", "message": "still waiting at the end: <node> is locked", "pods": 1},
        {"refused_by": "admission", "message": "pods is forbidden: exceeded quota (a)", "workloads": 1},
    ]


def test_time_sliced_pods_use_no_gpu_memory_in_the_timeline(dev):
    _, pools = dev
    notebook = {"name": "nb", "team": "ml-research", "pool": "g6-timeslice", "gpuMemoryMib": 4096, "gpuCores": 25}
    demand = Trace.model_validate(
        {"stack": "dev", "hours": 1, "deployments": [{**notebook, "replicas": {"00:00": 2}}]}
    ).demand()
    seen = Observations(START, run_end=_at(60))
    seen.claims = {"a": ClaimRecord("a", "g6.xlarge", "g6-timeslice", _at(0), _at(1), None, "", "node-a")}
    seen.samples = [Sample(_at(30), {"nb": 2}, 0)]
    [sample] = run_document(demand, seen, pools, day_bounds(demand, pools), {})["timeline"]
    assert (sample["gpu_memory_used_mib"], sample["gpu_memory_paid_mib"], sample["nodes"]) == (0, 0, 1)


def test_records_are_not_changed_by_measuring(dev):
    _, pools = dev
    seen = _seen()
    before = copy.deepcopy(seen)
    demand = _synthetic_demand()
    run_document(demand, seen, pools, day_bounds(demand, pools), {})
    assert seen == before


def _running_pod(limits: dict[str, str], annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"annotations": annotations},
        "spec": {"containers": [{"resources": {"limits": limits}}]},
        "status": {"phase": "Running"},
    }


def test_a_hami_pod_runs_only_once_hamis_device_plugin_allocated_it():
    """KWOK reports a bound pod Running at once; a kubelet starts a pod asking HAMi's resources after Allocate."""
    hami = {names.GPU: "1", names.GPU_MEMORY: "4096", names.GPU_CORES: "25"}
    assert not _started(_running_pod(hami, {}))  # bypassed HAMi (its webhook fails open): never allocated
    assert not _started(_running_pod(hami, {HAMI_NODE: "n", HAMI_BIND_PHASE: "allocating"}))
    assert _started(_running_pod(hami, {HAMI_NODE: "n", HAMI_BIND_PHASE: "success"}))
    assert _started(_running_pod({names.GPU_SHARED: "1"}, {}))  # the NVIDIA plugin's pods: no HAMi allocation


def test_a_day_whose_pods_live_less_real_time_than_the_rig_needs_is_too_fast():
    """short-day's 03:00 pods live 90 simulated minutes: 30 real s at 20 s/h, under the floor (34 s/h gives them
    50 s); at 10 s/h its busiest hour (00:30-01:30: three batch pods and ten chat replicas) also adds 13 pods in
    10 real s, faster than the rig has kept up with (13 / 1.25 = 10.4: 11 s/h)."""
    day = load_trace(WORKLOADS / "short-day.yaml").demand()
    life = {"group": "chat", "minute": 180, "life_minutes": 90, "life_real_s": 30.0, "floor_s": PLACEMENT_FLOOR_S}
    assert too_fast(replace(day, seconds_per_hour=20)) == {"shortest_life": life, "seconds_per_hour_needed": 34}
    assert too_fast(replace(day, seconds_per_hour=10)) == {
        "shortest_life": {**life, "life_real_s": 15.0},
        "busiest_hour": {"minute": 30, "pods": 13, "pods_per_s": 1.3, "rate_per_s": PLACEMENT_RATE_PER_S},
        "seconds_per_hour_needed": 34,
    }
    assert too_fast(replace(day, seconds_per_hour=33)) is not None
    assert too_fast(replace(day, seconds_per_hour=34)) is None


def test_the_shipped_production_day_is_not_too_fast_at_its_own_speed():
    day = load_simulation(WORKLOADS / "production-day.csv", WORKLOADS / "production-day.mapping.yaml")
    assert too_fast(day) is None


@pytest.mark.parametrize("path", sorted(WORKLOADS.glob("*-day.yaml")), ids=lambda p: p.name)
def test_no_shipped_day_is_too_fast_at_its_own_speed(path):
    assert too_fast(load_trace(path).demand()) is None
