"""Disruption and budgets: a `nodes: 0` window keeps an empty node, and consolidation once it is away."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from e2e.cluster import prometheus
from e2e.cluster.stack import daily_window
from e2e.cluster.workloads import (
    Context,
    app_pods,
    events,
    gpu_deployment,
    nodeclaims,
    rig_pool,
    running,
    team_pool,
)
from e2e.suites.base import CONSOLIDATION_BOUND_S, Result, Scenario, ScenarioFailure, settle, wait

SEED_TEAM = "inference"


def disruption_budget(ctx: Context) -> Result:
    """A `nodes: 0` budget whose window covers now keeps an empty node; moved away from now, the same budget lets
    Karpenter consolidate it. Both windows are computed from the clock, so this holds at any hour and weekday."""
    team = ctx.team(SEED_TEAM)
    pool = team_pool(ctx, team)
    nodepool = rig_pool(ctx, pool)
    now = datetime.now(UTC)

    def with_window(start: datetime, duration: timedelta) -> dict[str, Any]:
        disruption = {**nodepool["spec"]["disruption"], "budgets": [{"nodes": "0", **daily_window(start, duration)}]}
        return {**nodepool, "spec": {**nodepool["spec"], "disruption": disruption}}

    covering = with_window(now - timedelta(hours=1), timedelta(hours=3))
    away = with_window(now + timedelta(hours=12), timedelta(hours=1))
    deployment = gpu_deployment(ctx, "budgeted", team, pool, 1, {"cores": 50, "mem_mib": 4096})
    hold_s = CONSOLIDATION_BOUND_S
    try:
        ctx.kubectl.apply([covering])
        ctx.kubectl.apply([deployment])
        wait(ctx, "the budgeted pod Running", lambda: len(running(app_pods(ctx, team, "budgeted"))) == 1)
        ctx.kubectl.delete([deployment])
        # Empty now: with no budget in force Karpenter would take it within its consolidation bound.
        settle(ctx, hold_s)
        kept = [c["metadata"]["name"] for c in nodeclaims(ctx)]
        if not kept:
            window = covering["spec"]["disruption"]["budgets"]
            raise ScenarioFailure(f"the empty node was consolidated while the nodes: 0 window {window} covered now")
        # Karpenter says so itself: it publishes DisruptionBlocked on the NodePool when a reason's budget is 0 while
        # the pool has nodes (pkg/controllers/disruption/helpers.go BuildDisruptionBudgetMapping), and sets that
        # reason's allowed disruptions to 0. Each reason's figure is set when its disruption method runs, so another
        # reason's series may still hold its value from before the window; Empty is the one that would take the node.
        blocked = "No allowed disruptions for disruption reason Empty due to blocking budget"
        if not any(blocked in e for e in events(ctx, "default", about=pool)):
            raise ScenarioFailure(f"Karpenter kept the empty node of {pool} without saying '{blocked}'")
        allowed_in = prometheus.allowed_disruptions(pool)
        if "empty=0" not in allowed_in:
            raise ScenarioFailure(f"Karpenter allows disruptions {allowed_in} of {pool} inside the nodes: 0 window")
        ctx.kubectl.apply([away])
        gone = wait(
            ctx, "the empty node consolidated once the window is away from now", lambda: not nodeclaims(ctx), 240
        )
        allowed_out = prometheus.allowed_disruptions(pool)
    finally:
        ctx.kubectl.delete([deployment])
        ctx.kubectl.apply([nodepool])
    inside, outside = (window["spec"]["disruption"]["budgets"][0]["schedule"] for window in (covering, away))
    return Result(
        "disruption-budget",
        True,
        f"nodes: 0 over now ({inside!r}, 3h): Karpenter allows {allowed_in}, empty node kept {hold_s} s; window "
        f"moved away ({outside!r}, 1h): consolidated after {gone:.0f} s",
        {
            "held_s": hold_s,
            "seconds_to_consolidated": round(gone, 1),
            "allowed_disruptions_inside_window": allowed_in,
            "allowed_disruptions_outside_window": allowed_out,
        },
        ["windows computed from the clock at run time (Karpenter reads budget schedules in UTC)"],
    )


SCENARIOS = (
    Scenario(
        "disruption-budget",
        disruption_budget,
        (SEED_TEAM,),
        shows=(
            "a `nodes: 0` budget whose window covers now keeps an empty node (Karpenter says `No allowed "
            "disruptions for disruption reason Empty due to blocking budget` on the NodePool, and its "
            "`karpenter_nodepools_allowed_disruptions` for Empty is 0), and the same budget with its window away "
            "from now lets Karpenter consolidate it; both windows are computed from the clock, so this holds at "
            "any hour"
        ),
    ),
)
