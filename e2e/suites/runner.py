"""Which scenarios `make e2e` has, and how they run: those that need no stack first, then up to CONCURRENCY at once,
each on its own tenant (copies of the stack's teams and pools), then those that change what every scenario sees,
alone. A failure is caught, reported with what the cluster shows, and the scenario's tenant reset."""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from e2e.cluster.api import ApiError
from e2e.cluster.errors import RigError
from e2e.cluster.invariants import Finding, Invariants, Tally
from e2e.cluster.kubectl import KubectlError
from e2e.cluster.rig import wait_for
from e2e.cluster.start import say
from e2e.cluster.tenants import Tenant
from e2e.cluster.workloads import Context, nodeclaims
from e2e.suites import disruption, faults, headroom, objects, placement, quotas, registration, scale_up, timeslicing
from e2e.suites.base import Result, Scenario, ScenarioFailure, diagnostics
from gpushare import names

RUNNING_STACK = "dev"
SCENARIOS: dict[str, Scenario] = {
    scenario.name: scenario
    for module in (objects, registration, scale_up, placement, disruption, quotas, timeslicing, headroom, faults)
    for scenario in module.SCENARIOS
}
# The fault scenarios run by `make chaos` (python -m e2e --chaos), not by `make e2e`.
CHAOS = tuple(scenario.name for scenario in faults.SCENARIOS)
# Scenarios sharing the cluster at once. Most of a scenario's time is spent waiting on controllers' timers, not
# computing; more than this at once on two cores slows the controllers the scenarios wait on.
CONCURRENCY = 4
# The longest scenarios as this machine measured them (docs/results.md), started first when no report of an
# earlier run says otherwise: a fresh clone, as CI runs, would otherwise start them last and wait for them alone.
MEASURED_LONGEST = (
    "karpenter-hami-disagree",
    "examples",
    "several-nodes",
    "warm-headroom",
    "priorities",
    "seed-003-policies",
    "resource-not-registered",
)


def tenant_name(scenario: str) -> str:
    """A scenario's tenant: the initials of its name (`seed-scale-up` -> `ssu`), short enough for every copied
    team and pool name to stay within the config's 32 characters."""
    return "".join(word[0] for word in scenario.split("-"))


def tenants_of(selected: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Tenant -> the stack's teams it copies, for the selected scenarios that want their own."""
    return {tenant_name(name): SCENARIOS[name].teams for name in selected if SCENARIOS[name].teams}


def team_keys_of(selected: Iterable[str]) -> dict[str, Mapping[str, Mapping[str, Any]]]:
    """Tenant -> team -> the stack-file keys the selected scenarios set on their copies."""
    return {tenant_name(name): SCENARIOS[name].team_keys for name in selected if SCENARIOS[name].team_keys}


def left_out(selected: Iterable[str], tenants: Iterable[Tenant]) -> Callable[[dict[str, Any]], bool]:
    """Whether an object of the running plan is one the selected scenarios want never applied: a kind they name in
    `without`, of a pool of their tenant."""
    by_name = {tenant.name: tenant for tenant in tenants}
    unwanted = {
        (kind, pool)
        for name in selected
        if SCENARIOS[name].without and tenant_name(name) in by_name
        for kind in SCENARIOS[name].without
        for pool in by_name[tenant_name(name)].pools.values()
    }
    return lambda obj: (obj["kind"], obj["metadata"].get("labels", {}).get(names.POOL_LABEL)) in unwanted


def run_scenarios(ctx: Context, selected: list[str], order: list[str]) -> list[Result]:
    """Run the selected scenarios that need the stack: concurrently where they may, then those that must be alone.
    `order` puts the longest first, so the last to finish is a short one."""
    tenants = {tenant.name: tenant for tenant in ctx.tenants}
    # The invariant checker samples the cluster throughout; each scenario is judged on what it owns meanwhile.
    ctx.invariants = Invariants.for_release(ctx.api, ctx.hami, ctx.rendered_hami.metrics_port)
    ctx.invariants.start()
    shared = sorted(
        (n for n in selected if not SCENARIOS[n].alone), key=lambda n: order.index(n) if n in order else len(order)
    )
    results: dict[str, Result] = {}
    pool = ThreadPoolExecutor(max_workers=CONCURRENCY, thread_name_prefix="scenario")
    try:
        futures = {name: pool.submit(run_one, name, ctx, tenants.get(tenant_name(name))) for name in shared}
        for name, future in futures.items():
            results[name] = future.result()
    finally:
        # After a Ctrl-C no queued scenario starts, and the rig is stopped without waiting for the running ones
        # (they end on the stopped rig).
        pool.shutdown(wait=False, cancel_futures=True)
    for name in selected:
        if SCENARIOS[name].alone:
            results[name] = run_one(name, ctx, tenants.get(tenant_name(name)))
    tally = ctx.invariants.stop()
    if ctx.agent.failure:
        raise RigError(f"the node agent stopped: {ctx.agent.failure}")
    return [*(results[name] for name in selected), invariants_result(tally)]


def run_one(name: str, ctx: Context, tenant: Tenant | None) -> Result:
    scenario = SCENARIOS[name]
    own = ctx.for_tenant(tenant) if tenant is not None else ctx.for_tenant(ctx.tenant)
    say(f"{name} ...")
    started = time.monotonic()
    namespaces = list((tenant.teams.values() if tenant else scenario.teams) or ())
    mark = own.invariants.mark() if own.invariants is not None else None
    try:
        result = scenario.run(own)
    except (ScenarioFailure, KubectlError, ApiError, RigError) as error:
        result = Result(name, False, str(error), notes=diagnostics(own, namespaces))
    except Exception as error:  # a bug in the scenario: fail it, keep the rig and the other scenarios going
        seen = [*traceback.format_exc().splitlines(), *diagnostics(own, namespaces)]
        result = Result(name, False, f"{type(error).__name__}: {error}", notes=seen)
        for line in seen:
            say(f"  {name}: {line}")
    if own.invariants is not None and mark is not None:

        def owned(finding: Finding) -> bool:
            return scenario.alone or finding.namespace in namespaces or bool(finding.pool and own.owns(finding.pool))

        seen = own.invariants.since(mark, owned)
        result.figures["invariants"] = seen.summary()
        if seen.failed and result.passed:
            result = replace(result, passed=False, summary=f"invariants broken: {'; '.join(seen.messages())}")
    if not result.passed:
        _reset(own, namespaces)
    result.seconds = round(time.monotonic() - started, 1)
    result.waited = dict(own.waited)
    say(f"{'PASS' if result.passed else 'FAIL'} {name} ({result.seconds:.0f} s): {result.summary}")
    return result


def invariants_result(tally: Tally) -> Result:
    """The whole run's invariant checks as a line of the report: every sample, whoever owned what it found."""
    counts = ", ".join(f"{kind} {count}" for kind, count in sorted(tally.checks.items()))
    broken = f"; broken: {'; '.join(tally.messages())}" if tally.failed else ""
    summary = f"{sum(tally.checks.values())} checks in {tally.samples} samples ({counts}){broken}"
    return Result("invariants", not tally.failed, summary, {"invariants": tally.summary()})


def _reset(ctx: Context, namespaces: list[str]) -> None:
    """After a failed scenario: delete every workload in its namespaces and wait until Karpenter has removed its
    nodes, so nothing it left behind is counted by another."""
    for namespace in namespaces:
        ctx.kubectl.run("delete", "deployments,jobs,pods", "--all", "-n", namespace, "--wait=true", "--timeout=120s")
    wait_for("every NodeClaim gone after a failed scenario", lambda: not nodeclaims(ctx), 300, interval_s=2)


def longest_first(report: Path) -> list[str]:
    """Scenario names by the time each took in the last run's report (longest first); MEASURED_LONGEST without a
    report. A scenario the order does not name runs after those it names."""
    try:
        last = json.loads(report.read_text())["scenarios"]
    except (OSError, ValueError, KeyError):
        return list(MEASURED_LONGEST)
    return [s["name"] for s in sorted(last, key=lambda s: -float(s.get("seconds", 0)))]
