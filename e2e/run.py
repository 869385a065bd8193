"""Inside the rig's network namespace: start the cluster, run the suites or the simulator, write the report, stop.

Run by `python -m e2e` under `unshare --net`; not meant to be started by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from types import FrameType

from e2e.cluster.api import ApiError
from e2e.cluster.errors import RigError
from e2e.cluster.kubectl import KubectlError
from e2e.cluster.stack import plan_of, stack_file
from e2e.cluster.start import Cluster, say
from e2e.cluster.tenants import with_tenants
from e2e.simulator.day import Day
from e2e.simulator.demand import Demand
from e2e.simulator.figures import run_document
from e2e.simulator.mix import Workload, load_simulation, simulate
from e2e.simulator.mix import table as simulation_table
from e2e.simulator.oracle import Pools, day_bounds
from e2e.simulator.report import plot, run_stem
from e2e.simulator.variants import BASELINE, trace_variant_plan
from e2e.suites import report
from e2e.suites.base import Result
from e2e.suites.engine import run_engine
from e2e.suites.runner import (
    CHAOS,
    RUNNING_STACK,
    SCENARIOS,
    left_out,
    longest_first,
    run_one,
    run_scenarios,
    team_keys_of,
    tenants_of,
)
from e2e.tryout.main import main as try_main
from gpushare.paths import PROJECT_ROOT

REPORT_DIR = PROJECT_ROOT / "build" / "e2e"
# One document per (variant, run) of a trace; `python -m e2e` gathers them into simulate.json and simulate.md.
RUNS_DIR = REPORT_DIR / "simulate-runs"
# make chaos's report and logs, beside make e2e's.
CHAOS_DIR = REPORT_DIR / "chaos"
# The plan the suites run: the running stack with a tenant per scenario (e2e.cluster.tenants).
RIG_STACK = "rig"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m e2e", description="Run the offline cluster scenarios.")
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS), help="run only these")
    parser.add_argument(
        "--simulate", type=Path, metavar="WORKLOAD", help="run a workload mix or a trace instead (make simulate)"
    )
    parser.add_argument(
        "--mapping", type=Path, metavar="FILE", help="with --simulate PODS: replay a pod list mapped by FILE"
    )
    parser.add_argument("--runs", type=int, default=1, help="with a day: runs per stack variant (default 1)")
    parser.add_argument(
        "--speeds",
        type=_speeds,
        metavar="S,S",
        help="with a day: run it at each of these secondsPerHour (the speed check), instead of the file's own",
    )
    parser.add_argument(
        "--chaos", action="store_true", help="run the fault scenarios instead of make e2e's (make chaos)"
    )
    parser.add_argument(
        "--engine", action="store_true", help="run the engine phase instead: pulumi up .. destroy (make engine)"
    )
    parser.add_argument(
        "--with-engine",
        action="store_true",
        help="the engine phase beside the scenarios, each on a rig of its own (make e2e)",
    )
    parser.add_argument(
        "--try", dest="try_path", type=Path, metavar="PODS", help="place a team's manifests (a file or folder) instead"
    )
    parser.add_argument("--team", help="with --try: the team whose namespace runs them")
    parser.add_argument("--stack", default="dev", help="with --try: the stack the cluster runs (default dev)")
    parser.add_argument("--variant", default=BASELINE, help=argparse.SUPPRESS)
    parser.add_argument("--run", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--speed", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--bin-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.engine and (args.simulate is not None or args.scenario):
        parser.error("--engine runs the engine phase alone: drop --scenario and --simulate")
    if args.chaos and (args.simulate is not None or args.engine):
        parser.error("--chaos runs the fault scenarios: drop --simulate and --engine")
    if args.with_engine and (args.engine or args.chaos or args.simulate is not None or args.try_path is not None):
        parser.error("--with-engine goes with make e2e's scenarios: drop --engine, --chaos, --simulate and --try")
    if args.simulate is not None and args.scenario:
        parser.error("--simulate runs a workload, not scenarios: drop --scenario")
    if args.runs < 1:
        parser.error(f"--runs {args.runs}: run at least once")
    if args.try_path is not None and (args.engine or args.simulate is not None or args.scenario):
        parser.error("--try places manifests alone: drop --scenario, --simulate and --engine")
    if (args.try_path is None) != (args.team is None):
        parser.error("--try PODS and --team TEAM go together")
    if args.mapping is not None and args.simulate is None:
        parser.error("--mapping goes with --simulate PODS (the pod list it maps)")
    return args


def _speeds(text: str) -> list[int]:
    """`20,60`: each at least 5 and at most 3600 real seconds per simulated hour, no repeats."""
    try:
        speeds = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: write whole seconds per simulated hour, e.g. 20,60") from None
    if any(not 5 <= speed <= 3600 for speed in speeds) or len(set(speeds)) != len(speeds):
        raise argparse.ArgumentTypeError(f"{text!r}: each from 5 to 3600, each once")
    return speeds


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _commit() -> str:
    """The clone's commit, `-dirty` when it has changes: the conditions a measurement was made under."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, text=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain"], cwd=PROJECT_ROOT, capture_output=True, text=True
        ).stdout
    except OSError:
        return "unknown"
    return head.stdout.strip() + ("-dirty" if dirty.strip() else "") if head.returncode == 0 else "unknown"


def run(args: argparse.Namespace) -> int:
    workload = load_simulation(args.simulate, args.mapping) if args.simulate else None
    if isinstance(workload, Demand) and args.speed is not None:
        workload = replace(workload, seconds_per_hour=args.speed)
    running_stack = workload.stack if workload else RUNNING_STACK
    default = list(CHAOS) if args.chaos else [name for name in SCENARIOS if name not in CHAOS]
    selected = [] if workload else (args.scenario or default)
    simulation: dict | None = None
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    work = Path(tempfile.mkdtemp(prefix="gpushare-e2e-"))
    if args.engine:
        signal.signal(signal.SIGTERM, _interrupt)
        return run_engine(args.bin_dir, work)
    if args.try_path is not None:
        return try_main(args.try_path, args.team, args.stack, args.bin_dir, work, REPORT_DIR, _commit())
    started = time.monotonic()
    plans = {stack: plan_of(stack, stack_file(stack), work) for stack in ("dev", "prod")}
    tenants = ()
    if isinstance(workload, Demand) and args.variant != BASELINE:
        [variant] = [v for v in workload.variants if v.name == args.variant]
        plans[running_stack] = trace_variant_plan(running_stack, variant, work)
    if workload is None:
        document, tenants = with_tenants(plans[running_stack].source, tenants_of(selected), team_keys_of(selected))
        plans[RIG_STACK] = plan_of(RIG_STACK, document, work)
        running_stack = RIG_STACK
    # make e2e's scenarios run on what `pulumi up` created; make chaos and make simulate on the rig's applier.
    by_engine = workload is None and not args.chaos
    cluster = Cluster(args.bin_dir, work, plans, running_stack, tuple(tenants), by_engine=by_engine)
    results: list[Result] = []
    startup_s = 0.0
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        ctx = cluster.start()
        for name in [n for n in selected if SCENARIOS[n].before_stack]:
            results.append(run_one(name, ctx, None))
        if workload or any(not SCENARIOS[name].before_stack for name in selected):
            cluster.run_stack(ctx, left_out(selected, tenants))
            startup_s = time.monotonic() - started - sum(r.seconds for r in results)
            if isinstance(workload, Workload):
                say(f"simulating {args.simulate} on the {running_stack} stack")
                simulation = simulate(ctx, workload)
            elif workload is not None:
                say(
                    f"a {workload.hours} h day of {args.simulate} on {running_stack} ({args.variant}, run "
                    f"{args.run}), {workload.seconds_per_hour} s per simulated hour"
                )
                pools = Pools(plans[running_stack], ctx.catalog, ctx.hami)
                bounds = day_bounds(workload, pools)
                seen = Day(ctx, workload, plans[running_stack]).run()
                seen.wall_seconds = time.monotonic() - started  # the rig's start-up included: what a user waits
                identity = {
                    "trace": str(args.simulate),
                    "mapping": str(args.mapping) if args.mapping else None,
                    "variant": args.variant,
                    "run": args.run,
                    "conditions": {"commit": _commit(), "seconds_per_hour": workload.seconds_per_hour},
                }
                simulation = run_document(workload, seen, pools, bounds, identity)
            after = [n for n in selected if not SCENARIOS[n].before_stack]
            order = longest_first((CHAOS_DIR if args.chaos else REPORT_DIR) / "report.json")
            results += run_scenarios(ctx, after, order)
    except KeyboardInterrupt:
        say("interrupted; stopping the rig")
        return 130
    except (RigError, KubectlError, ApiError) as error:
        say(str(error))
        return 2
    finally:
        # A second Ctrl-C or SIGTERM must not cut the clean-up short: that would leave the rig running.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        cluster.stop((CHAOS_DIR if args.chaos else REPORT_DIR) / "logs")
    elapsed = time.monotonic() - started
    if simulation is not None and isinstance(workload, Demand):
        RUNS_DIR.mkdir(parents=True, exist_ok=True)
        stem = run_stem(simulation)
        (RUNS_DIR / f"{stem}.json").write_text(json.dumps(simulation, indent=2, sort_keys=True) + "\n")
        plot(simulation, REPORT_DIR / f"{stem}.png")
        broken = (simulation.get("invariants") or {}).get("failed")
        if broken:
            say(f"the day broke the rig's invariants: {'; '.join(broken)}")
        return 1 if broken else 0
    if simulation is not None:
        REPORT_DIR.mkdir(parents=True, exist_ok=True)
        (REPORT_DIR / "simulate.json").write_text(json.dumps(simulation, indent=2, sort_keys=True) + "\n")
        print(simulation_table(simulation))
        return 0
    report_dir = CHAOS_DIR if args.chaos else REPORT_DIR
    installed = report.ENGINE_INSTALLED if by_engine else report.APPLIER_INSTALLED
    deviations = (*report.DEVIATIONS, *installed, *cluster.chart_deviations())
    report.write(report_dir, results, elapsed, startup_s, deviations)
    print(report.table(results, elapsed, str((report_dir / "report.md").relative_to(PROJECT_ROOT))))
    return 0 if all(result.passed for result in results) else 1


if __name__ == "__main__":
    code = run(parse_args(sys.argv[1:]))
    if code == 130:
        # Interrupted, the rig stopped: scenario threads still waiting on it must not hold the exit.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
