"""`make e2e` and `make simulate`: build the rig's binaries (network: the Go module proxy), then run offline.

    python -m e2e [--scenario NAME ...]
    python -m e2e --chaos                       (the fault scenarios: docs/faults.md)
    python -m e2e --engine                      (the engine phase: docs/engine.md)
    python -m e2e --with-engine                 (make e2e: the scenarios, and the engine phase beside them)
    python -m e2e --simulate FILE [--runs N] [--speeds S,S]
    python -m e2e --simulate PODS --mapping FILE [--runs N] [--speeds S,S]
    python -m e2e --try PODS --team TEAM [--stack dev|prod]   (make try: docs/try.md)

The build runs here; the cluster runs in `e2e.run` inside a private network namespace (`unshare --net`), so
nothing the rig starts is reachable from outside this machine's loopback. With --with-engine the engine phase runs
at the same time on a rig of its own, in a namespace of its own; its output is kept in build/e2e/engine.log and
shown after the scenarios' table. A day (a trace, or a replayed pod list)
runs once per speed, stack variant and run, each on a fresh rig, and the runs are gathered into
build/e2e/simulate.json and simulate.md.
Exit 0: every scenario passed (or the simulation ran); 1: a scenario failed, or a simulated day broke the rig's
invariants; 2: bad input, or the rig could not be built or started.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from e2e.cluster.build import build
from e2e.cluster.errors import RigError
from e2e.cluster.helm import charts_folder
from e2e.run import REPORT_DIR, RUNS_DIR, parse_args
from e2e.simulator import report as day_report
from e2e.simulator.demand import Demand
from e2e.simulator.mix import Workload, load_simulation
from e2e.simulator.variants import BASELINE, trace_variant_plan
from e2e.tryout.main import checked
from gpushare.errors import UserError

# The engine phase's output when it runs beside the scenarios (--with-engine).
ENGINE_LOG = REPORT_DIR / "engine.log"


def _checked(path: Path, mapping: Path | None = None) -> tuple[Workload | Demand | None, list[str]]:
    """The simulation file and every problem of it, including each variant's stack config as the program checks
    it; no simulation when it cannot be read."""
    try:
        simulation = load_simulation(path, mapping)
    except UserError as error:
        return None, str(error).splitlines()
    if not isinstance(simulation, Demand):
        return simulation, []
    problems = []
    with tempfile.TemporaryDirectory(prefix="gpushare-variants-") as work:
        for index, variant in enumerate(simulation.variants):
            try:
                trace_variant_plan(simulation.stack, variant, Path(work))
            except RigError as error:
                lines = str(error).split(": ", 1)[-1].splitlines()
                problems += [f"{mapping or path}: variants[{index}] ({variant.name}): {line}" for line in lines]
    return simulation, problems


def _waited(*children: subprocess.Popen[bytes]) -> tuple[int, ...]:
    """Each child's exit code, waited for through a Ctrl-C: it reaches the children too (the terminal's process
    group), and each stops its rig. subprocess.run would kill its child a quarter second after a Ctrl-C, and
    `unshare --kill-child` then the rig's Python with SIGKILL, before it could stop the rig's processes."""
    interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return tuple(child.wait() for child in children)
    finally:
        signal.signal(signal.SIGINT, interrupt)


def _scenarios_and_engine(command: list[str], scenario_args: list[str]) -> int:
    """The scenarios and the engine phase at once, each in a network namespace and on a rig of its own: the engine's
    minute and a half hides behind the scenarios' ten. Its output goes to ENGINE_LOG, shown once both are done.
    Exit 2 when either could not run, else 1 when either failed."""
    ENGINE_LOG.parent.mkdir(parents=True, exist_ok=True)
    with ENGINE_LOG.open("w") as log:
        engine = subprocess.Popen([*command, "--engine"], stdout=log, stderr=subprocess.STDOUT)
        scenarios = subprocess.Popen([*command, *scenario_args])
        codes = _waited(scenarios, engine)
    print(ENGINE_LOG.read_text(), end="", flush=True)
    unusual = [code for code in codes if code not in (0, 1)]
    return unusual[0] if unusual else max(codes)


def _gather(path: Path, day: Demand) -> None:
    runs = [json.loads(p.read_text()) for p in sorted(RUNS_DIR.glob("*.json"))]
    order = [BASELINE, *(v.name for v in day.variants)]
    runs.sort(key=lambda run: (order.index(run["variant"]), run["seconds_per_hour"], run["run"]))
    document = {"kind": "trace", "trace": str(path), "stack": day.stack, "runs": runs}
    document["summary"] = day_report.summary(runs)
    (REPORT_DIR / "simulate.json").write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    (REPORT_DIR / "simulate.md").write_text(day_report.markdown(document))
    print(day_report.terminal(document))


def main(argv: list[str]) -> int:
    args = parse_args(argv)  # reject bad arguments (and a bad simulation file) before a long build
    day = None
    if args.try_path is not None:
        _, problems = checked(args.try_path, args.team, args.stack)
        for line in problems:
            print(f"e2e: {line}", file=sys.stderr)
        if problems:
            return 2
    if args.simulate is not None:
        simulation, problems = _checked(args.simulate, args.mapping)
        for line in problems:
            print(f"e2e: {line}", file=sys.stderr)
        if problems:
            return 2
        day = simulation if isinstance(simulation, Demand) else None
        if day is None and (args.runs != 1 or args.speeds):
            print("e2e: --runs and --speeds repeat a day; a fixed mix runs once", file=sys.stderr)
            return 2
    try:
        charts_folder()  # every run renders or installs the stack's charts: say so before a long build
    except RigError as error:
        print(f"e2e: {error}", file=sys.stderr)
        return 2
    if shutil.which("unshare") is None:
        print("e2e: needs unshare (util-linux) to run the rig in its own network namespace", file=sys.stderr)
        return 2
    print("e2e: building the rig's binaries (cached after the first run)", file=sys.stderr, flush=True)
    try:
        bin_dir = build(REPORT_DIR / "build.log")
    except RigError as error:
        print(f"e2e: {error}", file=sys.stderr)
        return 2
    namespace = ["unshare", "--net", "--kill-child"]
    if os.geteuid() != 0:
        namespace.append("--map-root-user")
    command = [*namespace, sys.executable, "-m", "e2e.run", "--bin-dir", str(bin_dir)]
    if args.with_engine:
        return _scenarios_and_engine(command, [arg for arg in argv if arg != "--with-engine"])
    if day is None:
        os.execvp(command[0], [*command, *argv])
    shutil.rmtree(RUNS_DIR, ignore_errors=True)
    for old in REPORT_DIR.glob("simulate-*.png"):
        old.unlink()
    replayed = ["--mapping", str(args.mapping)] if args.mapping else []
    broken = False  # a run that broke the rig's invariants (exit 1) is still gathered with the others
    for speed in args.speeds or [day.seconds_per_hour]:
        for variant in [BASELINE, *(v.name for v in day.variants)]:
            for run in range(1, args.runs + 1):
                child = [*command, "--simulate", str(args.simulate), *replayed, "--variant", variant]
                child += ["--run", str(run), "--speed", str(speed)]
                [code] = _waited(subprocess.Popen(child))
                if code not in (0, 1):
                    return code
                broken = broken or code == 1
    _gather(args.simulate, day)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
