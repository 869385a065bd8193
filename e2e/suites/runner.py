"""Which scenarios `make e2e` has, and how one runs: a failure is caught, reported with what the cluster shows,
and the cluster reset so the next scenario starts from the state the others leave."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable

from e2e.cluster.api import ApiError
from e2e.cluster.errors import RigError
from e2e.cluster.kubectl import KubectlError
from e2e.cluster.rig import wait_for
from e2e.cluster.stack import ROOT
from e2e.cluster.start import say
from e2e.cluster.workloads import Context, nodeclaims
from e2e.suites.base import Result, ScenarioFailure, diagnostics
from e2e.suites.disruption import disruption_budget
from e2e.suites.objects import objects_accepted, team_admission
from e2e.suites.placement import karpenter_hami_disagree, seed_003_policies
from e2e.suites.quotas import priorities, quota_refuses
from e2e.suites.registration import gate_off, hami_registration, no_overlays, resource_not_registered
from e2e.suites.scale_up import cpu_limit_blocks_second_node, examples_run, seed_scale_up, several_nodes
from e2e.suites.timeslicing import time_slicing

RUNNING_STACK = "dev"
SEED_TEAM = "inference"
WIDE_TEAM = "ml-research"
SCENARIOS: dict[str, Callable[[Context], Result]] = {
    "objects-dev": lambda ctx: objects_accepted(ctx, "dev"),
    "objects-prod": lambda ctx: objects_accepted(ctx, "prod"),
    "hami-registration": hami_registration,
    "seed-scale-up": lambda ctx: seed_scale_up(ctx, RUNNING_STACK, SEED_TEAM),
    "seed-003-policies": lambda ctx: seed_003_policies(ctx, RUNNING_STACK, WIDE_TEAM),
    "several-nodes": lambda ctx: several_nodes(ctx, RUNNING_STACK, WIDE_TEAM, 12),
    "no-overlays": lambda ctx: no_overlays(ctx, RUNNING_STACK, SEED_TEAM),
    "gate-off": lambda ctx: gate_off(ctx, RUNNING_STACK, SEED_TEAM),
    "resource-not-registered": lambda ctx: resource_not_registered(ctx, RUNNING_STACK, SEED_TEAM),
    "cpu-limit": lambda ctx: cpu_limit_blocks_second_node(ctx, RUNNING_STACK, SEED_TEAM),
    "disruption-budget": lambda ctx: disruption_budget(ctx, RUNNING_STACK, SEED_TEAM),
    "quota": lambda ctx: quota_refuses(ctx, RUNNING_STACK, SEED_TEAM),
    "priorities": lambda ctx: priorities(ctx, RUNNING_STACK, WIDE_TEAM, SEED_TEAM),
    "karpenter-hami-disagree": lambda ctx: karpenter_hami_disagree(ctx, RUNNING_STACK, WIDE_TEAM),
    "team-admission": lambda ctx: team_admission(ctx, RUNNING_STACK, SEED_TEAM),
    "time-slicing": lambda ctx: time_slicing(ctx, RUNNING_STACK, WIDE_TEAM),
    "examples": lambda ctx: examples_run(ctx, sorted((ROOT / "examples").glob("*.yaml"))),
}
# Scenarios that need the cluster without the running stack come first.
BEFORE_STACK = ("objects-dev", "objects-prod")


def run_one(name: str, ctx: Context) -> Result:
    say(f"{name} ...")
    started = time.monotonic()
    try:
        result = SCENARIOS[name](ctx)
    except (ScenarioFailure, KubectlError, ApiError, RigError) as error:
        seen = diagnostics(ctx, [SEED_TEAM, WIDE_TEAM])
        result = Result(name, False, str(error), notes=seen)
    except Exception as error:  # a bug in the scenario: fail it, keep the rig and the other scenarios going
        seen = [*traceback.format_exc().splitlines(), *diagnostics(ctx, [SEED_TEAM, WIDE_TEAM])]
        result = Result(name, False, f"{type(error).__name__}: {error}", notes=seen)
        for line in seen:
            say(f"  {line}")
    if not result.passed:
        _reset(ctx)
    result.figures["scenario_seconds"] = round(time.monotonic() - started, 1)
    say(f"{'PASS' if result.passed else 'FAIL'} {name}: {result.summary}")
    return result


def _reset(ctx: Context) -> None:
    """After a failed scenario: delete every workload in the running stack's team namespaces and wait until
    Karpenter has removed every node, so the next scenario starts from the state the others leave."""
    teams = [ns["metadata"]["name"] for ns in ctx.plans[RUNNING_STACK].of_kind("Namespace")]
    for team in teams:
        ctx.kubectl.run("delete", "deployments,jobs,pods", "--all", "-n", team, "--wait=true", "--timeout=120s")
    wait_for("every NodeClaim gone after a failed scenario", lambda: not nodeclaims(ctx), 300, interval_s=2)
