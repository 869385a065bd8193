"""`make bench`: how long validation, rendering, the offline plan and the policy pack take, how the pack's time
grows with the stack, how long `make pack`'s exact packing takes for 100 to 500 pods, how long the last `make e2e`
took and where, each fault of the last `make chaos` and its burst, and how the offline cluster's wall time per
simulated hour grows with the pods of a day (printed, never asserted).

    python -m tools.bench [--days 50,150,250]

Without `--days` the simulated days are the runs `make simulate` recorded in build/e2e/simulate-runs/; with it,
production-shaped days of that many pods (tools.production_day, its busiest two hours) run through the rig first.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from e2e.simulator.exact import exact_packing
from e2e.simulator.mix import pool_kinds
from e2e.simulator.packing import PodShape
from gpushare import names
from gpushare.catalog import load_catalog
from gpushare.config import StackConfig
from gpushare.loader import load_stack_config
from gpushare.paths import PROJECT_ROOT
from gpushare.render.releases import helm_releases
from gpushare.stackfile import read_stack_file
from policies.gpushare_policies.registry import evaluate
from policies.gpushare_policies.stack import (
    LIMIT_RANGE,
    NAMESPACE,
    NODE_OVERLAY,
    NODE_POOL,
    RESOURCE_QUOTA,
    from_plan,
)
from tools.offline import run_program
from tools.production_day import pod_list

T = TypeVar("T")
GROWTH_SIZES = (100, 1_000, 10_000)
# The shipped stacks are judged for the day the benchmark runs.
TODAY = datetime.now(UTC).date()
# What grows with the number of pools and teams; everything else (cluster, releases, IAM) is there once.
SCALED_TYPES = frozenset(
    {NODE_POOL, NODE_OVERLAY, NAMESPACE, RESOURCE_QUOTA, LIMIT_RANGE}
    | {
        f"kubernetes:admissionregistration.k8s.io/v1:{kind}"
        for kind in (
            "MutatingAdmissionPolicy",
            "MutatingAdmissionPolicyBinding",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
        )
    }
)


def timed(label: str, repeat: int, work: Callable[[], T]) -> T:
    """Print the mean time of `repeat` runs; return the last result for the next step to use."""
    start = time.perf_counter()
    for _ in range(repeat):
        result = work()
    per_call_ms = (time.perf_counter() - start) / repeat * 1000
    print(f"{label:<42} {per_call_ms:9.2f} ms/run  ({repeat} runs)")
    return result


def _team_or_pool(resource: dict[str, Any]) -> bool:
    """A pool, overlay or team object: the part of a plan that repeats per pool and per team."""
    if resource["type"] not in SCALED_TYPES:
        return False
    labels = (resource["inputs"].get("metadata") or {}).get("labels") or {}
    return resource["type"] != NAMESPACE or names.TEAM_LABEL in labels


def scaled_plan(resources: list[dict[str, Any]], size: int) -> list[dict[str, Any]]:
    """`resources` plus renamed copies of its pools, overlays and teams (with their quotas and admission
    policies), about `size` resources in all; each copy refers only to its own pools and namespaces, so every
    copy is as valid as the original."""
    unit = [r for r in resources if _team_or_pool(r)]
    # Pool and team names: every reference between copied objects (and every copied name) contains one.
    owners = {str(r["inputs"]["metadata"]["name"]) for r in unit if r["type"] in (NODE_POOL, NAMESPACE)}
    pattern = re.compile(
        r"(?<![A-Za-z0-9])(" + "|".join(map(re.escape, sorted(owners, key=len, reverse=True))) + r")(?![A-Za-z0-9])"
    )
    text = json.dumps(unit)
    copies = max(0, round((size - len(resources)) / len(unit)))
    scaled = list(resources)
    for copy in range(1, copies + 1):
        scaled += json.loads(pattern.sub(lambda match, n=copy: f"{match.group(1)}-copy{n}", text))
    return scaled


def growth(resources: list[dict[str, Any]]) -> None:
    """evaluate() at 100, 1,000 and 10,000 resources: about 10x per step is linear, 100x is quadratic. Best of
    several runs on small plans (noise), each on a fresh view (nothing memoized by the run before)."""
    previous: tuple[int, float] | None = None
    for size in GROWTH_SIZES:
        plan = scaled_plan(resources, size)
        seconds = float("inf")
        for _ in range(max(1, 3_000 // size)):
            view = from_plan(plan, TODAY)
            start = time.perf_counter()
            evaluate(view)
            seconds = min(seconds, time.perf_counter() - start)
        pools, overlays = (sum(r["type"] == token for r in plan) for token in (NODE_POOL, NODE_OVERLAY))
        shape = f"{len(plan)} resources ({pools} pools, {overlays} overlays)"
        line = f"evaluate {shape:<42} {seconds * 1000:9.1f} ms {seconds * 1e6 / len(plan):6.1f} us/resource"
        if previous is not None:
            line += f"  x{seconds / previous[1]:.1f} for x{len(plan) / previous[0]:.1f} resources"
        print(line)
        previous = (len(plan), seconds)


E2E_REPORT = PROJECT_ROOT / "build" / "e2e" / "report.json"
SLOWEST = 5


def _last_run(report: Path, command: str) -> dict[str, Any] | None:
    """The report the last `command` on this machine wrote; None, said, when there is none."""
    try:
        return json.loads(report.read_text())
    except (OSError, ValueError):
        print(f"{command}: no report at {report.relative_to(PROJECT_ROOT)}; run {command} first")
        return None


def _passed(scenarios: list[dict[str, Any]]) -> str:
    return f"{sum(s['passed'] for s in scenarios)}/{len(scenarios)} passed"


def offline_cluster(report: Path) -> None:
    """The last `make e2e` on this machine (its report): the whole run, the cluster's start, and the slowest
    scenarios with where their time went. The figures of a warm run: the build is not in them."""
    document = _last_run(report, "make e2e")
    if document is None:
        return
    scenarios = document["scenarios"]
    print(
        f"make e2e (last run, {_passed(scenarios)}): {document['seconds']:.0f} s in all, "
        f"{document.get('startup_seconds', 0):.0f} s of it the cluster's start"
    )
    for scenario in sorted(scenarios, key=lambda s: -float(s.get("seconds", 0)))[:SLOWEST]:
        waited = ", ".join(f"{on} {seconds:.0f}" for on, seconds in sorted(scenario.get("waited", {}).items()))
        print(f"  {scenario['name']:<28} {scenario.get('seconds', 0):6.0f} s  waited: {waited or '-'}")


CHAOS_REPORT = PROJECT_ROOT / "build" / "e2e" / "chaos" / "report.json"


def faults(report: Path) -> None:
    """The last `make chaos` on this machine: each fault's recovery time, and the burst's time to all placed."""
    document = _last_run(report, "make chaos")
    if document is None:
        return
    scenarios = document["scenarios"]
    print(f"make chaos (last run, {_passed(scenarios)}): {document['seconds']:.0f} s in all")
    for scenario in scenarios:
        figures = scenario.get("figures", {})
        if "recovery_s" in figures:
            print(f"  {scenario['name']:<28} recovered in {figures['recovery_s']:.0f} s")
        elif "seconds_to_all_placed" in figures:
            print(
                f"  {scenario['name']:<28} {figures['admitted']} of {figures['created']} pods admitted, all placed "
                f"in {figures['seconds_to_all_placed']:.0f} s"
            )


RUNS = PROJECT_ROOT / "build" / "e2e" / "simulate-runs"
# A bench day: the production day's two busiest hours, at the default speed.
BENCH_MAPPING = """\
stack: prod
start: "2026-11-18T12:00:00Z"
hours: 2
rules:
  - {namespace: inference, pod: "chat-*", team: inference, pool: g6-shared}
  - {namespace: inference, team: inference, pool: g5-shared}
  - {namespace: ml-research, team: ml-research, pool: g5-shared}
  - {namespace: analytics, team: analytics, pool: g6-shared}
"""


def run_days(sizes: list[int]) -> None:
    """Production-shaped days of `sizes` pods through the rig (`python -m e2e`), each recorded in RUNS."""
    kept = []
    with tempfile.TemporaryDirectory(prefix="gpushare-bench-") as work:
        mapping = Path(work) / "mapping.yaml"
        mapping.write_text(BENCH_MAPPING)
        for size in sizes:
            pods = Path(work) / f"bench-{size}.csv"
            pods.write_text(pod_list(size))
            command = [sys.executable, "-m", "e2e", "--simulate", str(pods), "--mapping", str(mapping)]
            if subprocess.run(command, cwd=PROJECT_ROOT, check=False).returncode != 0:
                print(f"the rig could not play the day of {size} pods; see build/e2e/logs", file=sys.stderr)
                return
            kept += [json.loads(path.read_text()) for path in sorted(RUNS.glob("*.json"))]
    shutil.rmtree(RUNS, ignore_errors=True)  # each rig run replaced the directory: keep every size's
    RUNS.mkdir(parents=True)
    for index, run in enumerate(kept):
        (RUNS / f"bench-{index}.json").write_text(json.dumps(run))


def simulated_days() -> None:
    """Wall time per simulated hour against the pods each recorded day asked for."""
    runs = [json.loads(path.read_text()) for path in sorted(RUNS.glob("*.json"))] if RUNS.is_dir() else []
    if not runs:
        print("simulated days: none recorded yet (make simulate WORKLOAD=..., or python -m tools.bench --days N,N)")
        return
    runs.sort(key=lambda run: run["pods"]["total"]["asked"])
    for run in runs:
        pods = run["pods"]["total"]["asked"]
        shape = f"{Path(run['trace']).name} {run['variant']} at {run['seconds_per_hour']} s/h"
        print(
            f"simulate {shape:<48} {pods:5d} pods {run['hours']:3d} h {run['wall_seconds']:8.0f} s "
            f"{run['wall_seconds_per_simulated_hour']:6.1f} s per simulated hour"
        )


# Production-shaped pods per pool of the prod stack, (share of the pods, vGPUs, GPU MiB, GPU cores, CPU millis, MiB):
# CPU-heavy fractional pods on the two HAMi pools, whole GPUs on the exclusive one.
PACKING_SHAPES = {
    "g5-shared": [(0.2, 1, 3072, 15, 6000, 12288), (0.15, 1, 6144, 25, 10000, 24576), (0.1, 1, 10240, 40, 4000, 8192)],
    "g6-shared": [(0.15, 1, 4096, 20, 7000, 32768), (0.2, 1, 2048, 10, 5000, 8192)],
    "training": [(0.1, 1, 0, 0, 8000, 65536), (0.06, 2, 0, 0, 16000, 131072), (0.04, 4, 0, 0, 40000, 262144)],
}
PACKING_SIZES = (100, 250, 500)


def packing(config: StackConfig) -> None:
    """How long the exact packing (make pack's solver) takes for production-shaped pods over the prod stack's three
    pools, without their NodePool limits (which hold fewer pods than the largest size), and what it proved."""
    kinds = pool_kinds(config, load_catalog())
    for size in PACKING_SIZES:
        started = time.perf_counter()
        usd, bound, statuses = 0.0, 0.0, []
        for pool, shapes in PACKING_SHAPES.items():
            pods = [
                PodShape(vgpus, mib, cores, cpu, memory)
                for share, vgpus, mib, cores, cpu, memory in shapes
                for _ in range(round(share * size))
            ]
            found = exact_packing(pods, kinds[pool][0])
            usd, bound = usd + found.usd_per_hour, bound + found.lower_bound_usd
            statuses.append(found.status)
        seconds = time.perf_counter() - started
        gap = 100 * (usd - bound) / usd if usd else 0.0
        label = f"exact packing of {size} pods over 3 pools"
        print(f"{label:<42} {seconds * 1000:9.2f} ms    (${usd:.3f}/h, gap {gap:.2f}%: {', '.join(statuses)})")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--days", help="run production-shaped days of these pod counts through the rig first")
    args = parser.parse_args(argv)
    if args.days:
        run_days([int(size) for size in args.days.split(",")])
    raw = read_stack_file(PROJECT_ROOT / "Pulumi.prod.yaml")
    config = load_stack_config(raw, today=TODAY)
    timed("validate prod config", 200, lambda: load_stack_config(raw, today=TODAY))
    timed("render prod Helm releases", 200, lambda: helm_releases(config))
    monitor = timed("run prod program under mocks", 1, lambda: run_program(raw, "prod", TODAY))
    timed("evaluate the policy pack on the prod plan", 20, lambda: evaluate(from_plan(monitor.recorded, TODAY)))
    growth(run_program(read_stack_file(PROJECT_ROOT / "Pulumi.dev.yaml"), "dev", TODAY).recorded)
    packing(config)
    offline_cluster(E2E_REPORT)
    faults(CHAOS_REPORT)
    simulated_days()


if __name__ == "__main__":
    main(sys.argv[1:])
