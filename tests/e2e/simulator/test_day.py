"""A simulated day's compression of the stack's NodePools and its figures, from synthetic records (no rig)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from e2e.cluster.hami_chart import HamiRelease
from e2e.cluster.stack import Plan, load_plan
from e2e.simulator.day import ClaimRecord, Observations, PodRecord, Sample, Window, compress_pool
from e2e.simulator.figures import Pools, oracle_per_step, percentile, run_document
from e2e.simulator.trace import Trace, load_trace
from gpushare import names
from gpushare.catalog import load_catalog
from tests.conftest import ROOT

STARTED = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
DAY_START = datetime(2026, 11, 26, 9, 2, tzinfo=UTC)


def _trace(**changes: Any) -> Trace:
    base = {
        "stack": "dev",
        "deployments": [
            {
                "name": "chat",
                "team": "inference",
                "pool": "g4dn-shared",
                "gpuMemoryMib": 1536,
                "gpuCores": 10,
                "replicas": {"00:00": 2, "12:00": 12},
            }
        ],
    }
    return Trace.model_validate({**base, **changes})


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
    pool, notes, windows = compress_pool(
        _pool({"consolidationPolicy": "WhenEmpty", "consolidateAfter": "10m"}), STARTED, DAY_START, _trace()
    )
    assert pool["spec"]["disruption"]["consolidateAfter"] == "3s"  # 10 simulated minutes at 20 s per hour
    assert pool["spec"]["template"]["spec"]["expireAfter"] == "14400s"
    assert pool["spec"]["template"]["spec"]["nodeClassRef"]["kind"] == "KWOKNodeClass"
    assert windows == []
    assert len(notes) == 2


def test_a_budget_window_moves_to_the_real_minutes_its_simulated_window_covers():
    budgets = [{"nodes": "0", "schedule": "0 15 * * mon-fri", "duration": "9h"}, {"nodes": "1"}]
    pool, notes, [window] = compress_pool(
        _pool({"consolidateAfter": "Never", "budgets": budgets}), STARTED, DAY_START, _trace()
    )
    # 15:00 simulated is 300 real seconds after the day's start (9:02 UTC); 9 h are 180 s.
    assert pool["spec"]["disruption"]["budgets"] == [
        {"nodes": "0", "schedule": "7 9 * * *", "duration": "0h3m"},
        {"nodes": "1"},
    ]
    assert pool["spec"]["disruption"]["consolidateAfter"] == "Never"
    assert (window.start_minute, window.end_minute) == (15 * 60, 24 * 60)
    assert "simulated 15:00-24:00" in notes[-1]


def test_a_budget_closed_on_the_traces_weekday_or_not_once_a_day_is_dropped_and_said():
    budgets = [
        {"nodes": "0", "schedule": "0 15 * * mon-fri", "duration": "9h"},
        {"nodes": "0", "schedule": "0 9,15 * * *", "duration": "1h"},
    ]
    pool, notes, windows = compress_pool(_pool({"budgets": budgets}), STARTED, DAY_START, _trace(weekday="sat"))
    assert pool["spec"]["disruption"]["budgets"] == []
    assert windows == []
    assert ["not open on a sat" in notes[-2], "once-a-day windows only" in notes[-1]] == [True, True]


def test_percentile_is_nearest_rank():
    assert [percentile([4, 1, 3, 2], share) for share in (0.25, 0.5, 0.95, 1)] == [1, 2, 4, 4]


@pytest.fixture(scope="module")
def dev(plans) -> tuple[Plan, Pools]:
    plan = load_plan("dev", plans["dev"]["_folder"])
    return plan, Pools(plan, load_catalog(), HamiRelease.from_values(plan.helm_values[names.HAMI_RELEASE]))


def test_time_sliced_pools_hold_their_replicas_per_gpu_whatever_memory_pods_state(dev):
    _, pools = dev
    [kind, *_] = pools.kinds["g6-timeslice"]
    assert (kind.split, kind.gpu_memory_mib) == (4, 0)
    assert pools.kinds["g4dn-shared"][0].split == 10


def test_the_oracle_follows_demand_and_never_exceeds_one_whole_gpu_per_pod(dev):
    _, pools = dev
    trace = _trace()
    oracle = oracle_per_step(trace, pools)
    assert len(oracle) == 24 * 60 // trace.step_minutes
    assert {pool for step in oracle for pool in step} == {"g4dn-shared"}
    night, day = oracle[0]["g4dn-shared"], oracle[-1]["g4dn-shared"]
    assert 0 < night < day
    cheapest_gpu = min(kind.usd_per_hour / kind.gpus for kind in pools.kinds["g4dn-shared"])
    assert day <= 12 * cheapest_gpu


def test_the_shipped_inference_day_has_an_oracle_at_every_step(dev):
    _, pools = dev
    trace = load_trace(ROOT / "examples" / "workloads" / "inference-day.yaml")
    oracle = oracle_per_step(trace, pools)
    assert all(step.get("g4dn-shared", 0) > 0 for step in oracle)  # the chat service never scales to zero
    assert any("g5-shared" in step for step in oracle) and not all("g5-shared" in step for step in oracle)


def _seen() -> Observations:
    """Two simulated hours at 20 s each: one node from 0:00 to 1:00, a second from 0:30 to past the end; a pod that
    waited for the second node, one evicted in a budget window, one admission refusal."""
    start = 1000.0
    seen = Observations(start, start + 40)
    seen.claims = {
        "a": ClaimRecord("a", "g4dn.xlarge", "g4dn-shared", start - 5, start + 1, start + 20, "Empty", "node-a"),
        "b": ClaimRecord("b", "g4dn.2xlarge", "g4dn-shared", start + 10, start + 12, None, "", "node-b"),
    }
    seen.pods = {
        "1": PodRecord(
            "1", "chat-1", "chat", "inference", "chat", "gpushare-critical", "hami", start, start + 2, "node-a"
        ),
        "2": PodRecord(
            "2", "chat-2", "chat", "inference", "chat", "gpushare-critical", "hami", start + 9, start + 15, "node-b"
        ),
        "3": PodRecord(
            "3",
            "chat-3",
            "chat",
            "inference",
            "chat",
            "gpushare-critical",
            "hami",
            start + 30,
            None,
            None,
            "node-b is locked",
        ),
    }
    seen.samples = [Sample(start + 11, {"chat": 2}, 1)]
    seen.windows = [Window("g4dn-shared", 30.0, 60.0, ())]
    event = {"namespace": "inference", "kind": "Pod", "name": "chat-1", "uid": "1", "count": 1, "source": "karpenter"}
    seen.events = [
        {**event, "reason": "Evicted", "message": "Evicted pod: Empty", "at": start + 15},  # simulated 0:45
        {**event, "reason": "Evicted", "message": "Evicted pod: Underutilized", "at": start + 25},  # 1:15
        {**event, "kind": "ReplicaSet", "uid": "rs", "reason": "FailedCreate", "message": "quota", "count": 3, "at": 0},
    ]
    seen.wall_seconds = 40
    return seen


def test_the_run_document_from_synthetic_records(dev):
    _, pools = dev
    trace = _trace(hours=2)
    document = run_document(
        trace, _seen(), pools, [{"g4dn-shared": 1.0}] * 8, {"trace": "t.yaml", "variant": "stack", "run": 1}
    )
    cost = document["cost"]
    # Node a is paid from the day's start (clipped) to 20 s: 1 h; node b from 10 s to the end at 40 s: 1.5 h.
    assert cost["node_hours_by_type"] == {"g4dn.2xlarge": 1.5, "g4dn.xlarge": 1.0}
    xlarge = pools.catalog.instance_type("g4dn.xlarge").on_demand_usd_per_hour
    double = pools.catalog.instance_type("g4dn.2xlarge").on_demand_usd_per_hour
    assert cost["usd"] == round(xlarge + 1.5 * double, 3)
    assert cost["oracle_usd"] == 2.0
    assert cost["by_pool"] == {
        "g4dn-shared": {"usd": cost["usd"], "oracle_usd": 2.0, "ratio": round(cost["usd"] / 2, 3)}
    }
    [sample] = document["timeline"]
    assert (sample["nodes"], sample["gpu_memory_used_mib"], sample["gpu_cores_paid"]) == (2, 2 * 1536, 200)
    waits = document["waits"]["by_team"]["inference"]
    assert (waits["pods"], waits["max_s"], waits["beyond_launch_max_s"]) == (2, 6.0, 3.0)
    assert document["disruptions"] == {
        "by_cause": {"Empty": 1, "Underutilized": 1},
        "in_budget_window": {"inference": 1},
    }
    assert document["nodeclaims"] == {"launched": 2, "consolidated": 1, "by_reason": {"Empty": 1}}
    assert document["never_ran"] == [
        {"refused_by": "admission", "message": "quota", "pods": 3},
        {"refused_by": "hami", "message": "still waiting at the day's end: <node> is locked", "pods": 1},
    ]


def test_a_budget_that_holds_other_causes_does_not_count_consolidation(dev):
    _, pools = dev
    seen = _seen()
    seen.windows = [Window("g4dn-shared", 0.0, 120.0, ("Drifted",))]
    document = run_document(_trace(hours=2), seen, pools, [{"g4dn-shared": 1.0}] * 8, {})
    assert document["disruptions"]["in_budget_window"] == {"inference": 0}


def test_records_are_not_changed_by_measuring(dev):
    _, pools = dev
    seen = _seen()
    before = copy.deepcopy(seen)
    run_document(_trace(hours=2), seen, pools, [{"g4dn-shared": 1.0}] * 8, {})
    assert seen == before
