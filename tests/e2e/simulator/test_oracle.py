"""The oracle, the admitted demand and the policy-aware bound of a day, at exact event times (no rig)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from e2e.cluster.hami_values import HamiValues
from e2e.cluster.stack import load_plan
from e2e.simulator import exact, oracle
from e2e.simulator.budgets import Window, budget_windows
from e2e.simulator.oracle import PoolCost, Pools, admitted_demand, day_bounds, policy_bound
from e2e.simulator.packing import best_packing
from e2e.simulator.trace import Trace, load_trace
from gpushare import names
from gpushare.catalog import load_catalog
from tests.conftest import ROOT

BATCH = {"name": "embed", "team": "ml-research", "pool": "g5-shared", "gpuMemoryMib": 8192, "gpuCores": 50}


@pytest.fixture(scope="module")
def pools(plans) -> Pools:
    plan = load_plan("dev", plans["dev"]["_folder"])
    return Pools(plan, load_catalog(), HamiValues.from_values(plan.helm_values[names.HAMI_RELEASE]))


def _day(**changes: Any) -> Trace:
    return Trace.model_validate({"stack": "dev", **changes})


def _one_pod_usd(pools: Pools, group: dict[str, Any]) -> float:
    day = _day(jobs=[{**group, "arrivals": [{"at": "00:00", "count": 1, "durationMinutes": 1}]}])
    found = best_packing([pools.shape(day.jobs[0])], pools.kinds[group["pool"]])
    assert found is not None
    return found[0]


def test_a_job_between_two_steps_is_counted_for_exactly_its_minutes(pools: Pools):
    """A 10-minute job at 00:05 with 15-minute steps: a step-sampled oracle saw nothing at 00:00 or 00:15."""
    day = _day(stepMinutes=15, jobs=[{**BATCH, "arrivals": [{"at": "00:05", "count": 1, "durationMinutes": 10}]}])
    bounds = day_bounds(day.demand(), pools)
    assert bounds.usd("oracle")["g5-shared"] == pytest.approx(_one_pod_usd(pools, BATCH) * 10 / 60)
    assert bounds.oracle["g5-shared"].steps == [(0.0, 0.0), (5.0, _one_pod_usd(pools, BATCH)), (15.0, 0.0)]


def test_a_step_that_does_not_divide_the_day_weighs_the_day_exactly(pools: Pools):
    """A flat curve sampled every 7 minutes costs 24 hours of its pods (1440 minutes, not 206 steps of 7)."""
    chat = {"name": "chat", "team": "inference", "pool": "g4dn-shared", "gpuMemoryMib": 1536, "gpuCores": 10}
    day = _day(stepMinutes=7, deployments=[{**chat, "diurnal": {"trough": 3, "peak": 3, "peakAt": "12:00"}}])
    [per_hour] = {usd for _, usd in day_bounds(day.demand(), pools).oracle["g4dn-shared"].steps if usd}
    assert day_bounds(day.demand(), pools).usd("oracle")["g4dn-shared"] == pytest.approx(per_hour * 24)


def test_demand_after_the_day_is_counted_to_the_horizon(pools: Pools):
    day = _day(hours=1, jobs=[{**BATCH, "arrivals": [{"at": "00:30", "count": 1, "durationMinutes": 90}]}])
    bounds = day_bounds(day.demand(), pools)
    assert bounds.horizon == 120
    assert bounds.usd("oracle")["g5-shared"] == pytest.approx(_one_pod_usd(pools, BATCH) * 1.5)


def test_the_quota_admits_pods_in_order_and_a_refused_job_pod_runs_later(pools: Pools, monkeypatch):
    """ml-research may hold 2 vGPUs: a batch of 3 runs 2 at once; the third is admitted when one ends."""
    monkeypatch.setitem(pools.quotas, "ml-research", {names.GPU: 2})
    day = _day(jobs=[{**BATCH, "arrivals": [{"at": "01:00", "count": 3, "durationMinutes": 60}]}])
    admission = admitted_demand(day.demand(), pools)
    assert [(start, end, dict(alive)) for start, end, alive in admission.segments] == [
        (60, 120, {"embed": 2}),
        (120, 180, {"embed": 1}),
    ]
    assert (admission.asked["embed"], admission.refused["embed"], admission.late["embed"]) == (3, 0, 1)


def test_a_deployment_over_its_quota_is_left_out_of_the_oracle(pools: Pools, monkeypatch):
    monkeypatch.setitem(pools.quotas, "inference", {names.GPU_CORES: 30})
    chat = {"name": "chat", "team": "inference", "pool": "g4dn-shared", "gpuMemoryMib": 1536, "gpuCores": 10}
    day = _day(hours=2, deployments=[{**chat, "replicas": {"00:00": 5, "01:00": 2}}])
    admission = admitted_demand(day.demand(), pools)
    assert [(start, end, dict(alive)) for start, end, alive in admission.segments] == [
        (0, 60, {"chat": 3}),
        (60, 120, {"chat": 2}),
    ]
    assert (admission.asked["chat"], admission.refused["chat"]) == (5, 0)  # the two refused went at the scale-down


def test_a_job_the_quota_delays_past_the_horizon_is_served_in_the_tail_and_a_deployment_is_not(
    pools: Pools, monkeypatch
):
    """ml-research may hold 2 vGPUs: of a batch of 3 at 01:00 for an hour on a two-hour day, the third is admitted at
    the horizon and runs to 03:00, as on the rig, which bills its node there; the chat Deployment holds its pod past
    the horizon (its quota stays taken) but, as the run's bill stops at the horizon for nodes serving it, counts no
    more, in the oracle or its policy bound."""
    monkeypatch.setitem(pools.quotas, "ml-research", {names.GPU: 2})
    chat = {"name": "chat", "team": "inference", "pool": "g4dn-shared", "gpuMemoryMib": 1536, "gpuCores": 10}
    day = _day(
        hours=2,
        deployments=[{**chat, "replicas": {"00:00": 1}}],
        jobs=[{**BATCH, "arrivals": [{"at": "01:00", "count": 3, "durationMinutes": 60}]}],
    )
    admission = admitted_demand(day.demand(), pools)
    assert [(start, end, dict(alive)) for start, end, alive in admission.segments] == [
        (0, 60, {"chat": 1}),
        (60, 120, {"chat": 1, "embed": 2}),
        (120, 180, {"embed": 1}),
    ]
    assert (admission.refused["embed"], admission.late["embed"]) == (0, 1)
    bounds = day_bounds(day.demand(), pools)
    one = _one_pod_usd(pools, BATCH)
    assert bounds.horizon == 120
    assert bounds.usd("oracle")["g5-shared"] == pytest.approx(one)  # one pod's packing for the hour 01:00-02:00
    assert bounds.tail_usd("oracle", 180) == pytest.approx({"g4dn-shared": 0.0, "g5-shared": one})
    assert bounds.tail_usd("oracle", 150)["g5-shared"] == pytest.approx(one / 2)  # cut where the run's bill ends
    tail_policy = bounds.tail_usd("policy", 10_000)
    assert tail_policy["g4dn-shared"] == 0.0
    assert tail_policy["g5-shared"] >= one
    assert bounds.at("oracle", 150) == pytest.approx(one) and bounds.at("oracle", 60 * 4) == 0.0


def test_a_gang_ends_its_duration_after_its_last_pod_is_admitted(pools: Pools, monkeypatch):
    monkeypatch.setitem(pools.quotas, "ml-research", {names.GPU: 2})
    other = {**BATCH, "name": "first", "arrivals": [{"at": "00:00", "count": 1, "durationMinutes": 30}]}
    gang = {**BATCH, "gang": True, "arrivals": [{"at": "00:01", "count": 2, "durationMinutes": 60}]}
    admission = admitted_demand(_day(jobs=[other, gang]).demand(), pools)
    # One gang pod waits for `first` to end at 00:30; both run until 01:30.
    assert [(start, end, dict(alive)) for start, end, alive in admission.segments] == [
        (0, 1, {"first": 1}),
        (1, 30, {"first": 1, "embed": 1}),
        (30, 90, {"embed": 2}),
    ]


def test_the_shipped_inference_day_costs_what_its_steps_said(pools: Pools):
    """Everything of the inference day lies on its 15-minute grid, so the exact oracle equals the per-step one the
    README first reported ($19.07 chat, $19.11 batch)."""
    bounds = day_bounds(load_trace(ROOT / "examples" / "workloads" / "inference-day.yaml").demand(), pools)
    assert {pool: round(usd, 2) for pool, usd in bounds.usd("oracle").items()} == {
        "g4dn-shared": 19.07,
        "g5-shared": 19.11,
    }
    for pool, usd in bounds.usd("policy").items():
        assert usd >= bounds.usd("oracle")[pool]
    assert all(cost.unproven_minutes == 0 for cost in bounds.oracle.values())


def test_an_interval_the_solver_could_not_prove_is_counted_and_kept_apart(pools: Pools, monkeypatch):
    """A packing the limit left unproven still prices the interval (it exists), and its minutes are said per pool."""

    def unproven(*args: Any, **kwargs: Any) -> exact.Packing:
        found = exact.exact_packing(*args, **kwargs)
        return dataclasses.replace(found, status=exact.FEASIBLE)

    day = _day(jobs=[{**BATCH, "arrivals": [{"at": "00:30", "count": 3, "durationMinutes": 45}]}]).demand()
    proven = day_bounds(day, pools)
    monkeypatch.setattr(oracle, "exact_packing", unproven)
    stopped = day_bounds(day, pools)
    assert stopped.usd("oracle") == proven.usd("oracle")
    assert proven.oracle["g5-shared"].unproven_minutes == 0
    assert stopped.oracle["g5-shared"].unproven_minutes == 45


# The policy-aware bound on a hand-made oracle: 2 $/h from 00:00, 1 $/h from 01:00, 0 from 03:00.
ORACLE = PoolCost([(0.0, 2.0), (60.0, 1.0), (180.0, 0.0)])


def test_capacity_falls_only_consolidate_after_later():
    bound = policy_bound(ORACLE, 10, [])
    assert bound.steps == [(0.0, 2.0), (70.0, 1.0), (190.0, 0.0)]
    assert bound.usd(240) == pytest.approx(2 * 70 / 60 + 1 * 120 / 60)


def test_never_consolidating_holds_the_peak_all_day():
    assert policy_bound(ORACLE, math.inf, []).steps == [(0.0, 2.0)]


def test_a_zero_node_window_holds_what_was_there_when_it_opened():
    window = Window("p", 30.0, 150.0, {"nodes": "0"})
    assert policy_bound(ORACLE, 10, [window]).steps == [(0.0, 2.0), (150.0, 1.0), (190.0, 0.0)]


def test_a_window_that_holds_only_drift_does_not_hold_consolidation():
    window = Window("p", 30.0, 150.0, {"nodes": "0", "reasons": ["Drifted"]})
    assert policy_bound(ORACLE, 10, [window]).steps == policy_bound(ORACLE, 10, []).steps


def _pool(schedule: str, duration: str, **budget: Any) -> dict[str, Any]:
    budgets = [{"nodes": "0", "schedule": schedule, "duration": duration, **budget}, {"nodes": "1"}]
    return {"metadata": {"name": "p"}, "spec": {"disruption": {"budgets": budgets}}}


def test_a_window_opens_at_its_exact_minute_not_a_whole_real_minute():
    [window], _ = budget_windows(_pool("30 13 * * *", "1h"), "wed", 1440)
    assert (window.start_minute, window.end_minute) == (810, 870)


def test_an_overnight_window_is_open_at_midnight_from_the_evening_before():
    """`0 22 * * *` for 8 hours: yesterday's window runs to 06:00, today's opens at 22:00."""
    windows, _ = budget_windows(_pool("0 22 * * *", "8h"), "wed", 1440)
    assert [(w.start_minute, w.end_minute) for w in windows] == [(-120, 360), (1320, 1800)]


def test_the_evening_before_counts_only_on_its_own_weekday():
    """`0 22 * * mon-fri`: on a Monday, Sunday evening's window did not open."""
    windows, _ = budget_windows(_pool("0 22 * * mon-fri", "8h"), "mon", 1440)
    assert [(w.start_minute, w.end_minute) for w in windows] == [(1320, 1800)]
    windows, _ = budget_windows(_pool("0 22 * * mon-fri", "8h"), "tue", 1440)
    assert [(w.start_minute, w.end_minute) for w in windows] == [(-120, 360), (1320, 1800)]


def test_a_day_that_starts_later_in_utc_moves_the_windows():
    """A replayed day starting at 06:00 UTC: a 15:00 UTC window opens at its minute 540."""
    [window], _ = budget_windows(_pool("0 15 * * *", "1h"), "wed", 1440, offset_minutes=360)
    assert (window.start_minute, window.end_minute) == (540, 600)


def test_a_schedule_that_needs_a_date_is_dropped_and_said():
    windows, [note] = budget_windows(_pool("0 9 1 * *", "1h"), "wed", 1440)
    assert windows == []
    assert "depends on the date" in note
