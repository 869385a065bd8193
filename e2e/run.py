"""Inside the rig's network namespace: start the cluster, run the scenarios, write the report, stop.

Run by `python -m e2e` under `unshare --net`; not meant to be started by hand.
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

import yaml

from e2e import prometheus, report
from e2e.api import ApiError
from e2e.day import Day
from e2e.day_figures import Pools, oracle_per_step, run_document
from e2e.day_report import plot
from e2e.device_plugins import NvidiaPluginConfig
from e2e.errors import RigError
from e2e.hami_chart import HamiRelease
from e2e.instance_types import kwok_instance_types
from e2e.kubectl import Kubectl, KubectlError
from e2e.node_agent import RIG_STACK_LABEL, NodeAgent
from e2e.rig import Rig, wait_for
from e2e.scenarios import (
    Context,
    Result,
    ScenarioFailure,
    cpu_limit_blocks_second_node,
    diagnostics,
    disruption_budget,
    examples_run,
    gate_off,
    hami_registration,
    install_running_stack,
    karpenter_hami_disagree,
    no_overlays,
    nodeclaims,
    objects_accepted,
    priorities,
    quota_refuses,
    resource_not_registered,
    seed_003_policies,
    seed_scale_up,
    several_nodes,
    team_admission,
    time_slicing,
)
from e2e.simulate import Workload, load_simulation, simulate
from e2e.simulate import table as simulation_table
from e2e.stack import ROOT, Plan, load_plan, node_overlay_gate, trace_variant_plan, write_plan
from e2e.trace import BASELINE, Trace
from gpushare import names
from gpushare.catalog import InstanceType, load_catalog

REPORT_DIR = ROOT / "build" / "e2e"
# One document per (variant, run) of a trace; `python -m e2e` gathers them into simulate.json and simulate.md.
RUNS_DIR = REPORT_DIR / "simulate-runs"
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


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m e2e", description="Run the offline cluster scenarios.")
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS), help="run only these")
    parser.add_argument(
        "--simulate", type=Path, metavar="WORKLOAD", help="run a workload mix or a trace instead (make simulate)"
    )
    parser.add_argument("--runs", type=int, default=1, help="with a trace: runs per stack variant (default 1)")
    parser.add_argument("--variant", default=BASELINE, help=argparse.SUPPRESS)
    parser.add_argument("--run", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--bin-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.simulate is not None and args.scenario:
        parser.error("--simulate runs a workload, not scenarios: drop --scenario")
    if args.runs < 1:
        parser.error(f"--runs {args.runs}: run at least once")
    return args


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _apply_crds(rig: Rig, kubectl: Kubectl) -> None:
    for writer in ("aws-crds", "kwok-crds"):
        kubectl.apply_stream(subprocess.run([rig.binary(writer)], check=True, capture_output=True, text=True).stdout)
    kubectl.run("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")


def _restart_karpenter(rig: Rig, instance_types: Path, gate: str) -> None:
    rig.stop_process("karpenter")
    rig.start_karpenter(instance_types, gate)
    wait_for("Karpenter serving metrics again", prometheus.scraping_karpenter, 90, interval_s=1)


def run(args: argparse.Namespace) -> int:
    workload = load_simulation(args.simulate) if args.simulate else None
    running_stack = workload.stack if workload else RUNNING_STACK
    selected = [] if workload else (args.scenario or list(SCENARIOS))
    simulation: dict | None = None
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    catalog = load_catalog()
    work = Path(tempfile.mkdtemp(prefix="gpushare-e2e-"))
    plans = {stack: load_plan(stack, write_plan(stack, work / "plans")) for stack in ("dev", "prod")}
    if isinstance(workload, Trace) and args.variant != BASELINE:
        [variant] = [v for v in workload.variants if v.name == args.variant]
        plans[running_stack] = trace_variant_plan(running_stack, variant, work)
    rig = Rig(args.bin_dir, work)
    results: list[Result] = []
    started = time.monotonic()
    signal.signal(signal.SIGTERM, _interrupt)
    agent = None
    try:
        print(
            "e2e: starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler", file=sys.stderr, flush=True
        )
        rig.start_control_plane()
        kubectl = Kubectl(Path(rig.binary("kubectl")), rig.kubeconfig)
        _apply_crds(rig, kubectl)
        wait_for("the default ServiceAccount", lambda: _has_default_sa(kubectl), 60)
        hami = HamiRelease.from_values(plans[running_stack].helm_values[names.HAMI_RELEASE])
        nvidia_values = plans[running_stack].helm_values.get(names.NVIDIA_PLUGIN_RELEASE)
        nvidia = NvidiaPluginConfig.from_values(nvidia_values) if nvidia_values is not None else None
        print(
            "e2e: starting HAMi's scheduler extender and webhook, and its kube-scheduler", file=sys.stderr, flush=True
        )
        device_configs = _write_device_configs(rig, plans, running_stack)
        _start_hami(rig, kubectl, hami, device_configs[running_stack])

        def start_hami_node(node: str, itype: InstanceType, labels: dict[str, str]) -> None:
            _start_hami_node(rig, device_configs[labels.get(RIG_STACK_LABEL, running_stack)], node, itype)

        zeroed = (*hami.resource_names, names.GPU_SHARED)
        agent = NodeAgent(rig.api, catalog, zeroed, start_hami_node, nvidia)
        ctx = Context(rig.log_dir, rig.api, kubectl, catalog, plans, agent, hami, datetime.now(UTC))
        for name in [n for n in BEFORE_STACK if n in selected]:
            results.append(_run_one(name, ctx))
        if workload or any(name not in BEFORE_STACK for name in selected):
            print(
                "e2e: starting KWOK, Karpenter (kwok provider, the stack's NodeOverlay gate) and Prometheus",
                file=sys.stderr,
                flush=True,
            )
            install_running_stack(ctx, running_stack)
            instance_types = work / "instance-types.json"
            instance_types.write_text(json.dumps(kwok_instance_types(catalog), indent=1))
            rig.start_kwok()
            gate = node_overlay_gate(ctx.plans[running_stack])
            rig.start_karpenter(instance_types, gate)
            ctx.restart_karpenter = lambda gate_text: _restart_karpenter(rig, instance_types, gate_text)
            ctx.stack_gate = gate
            rig.start_prometheus(prometheus.write_config(work, hami))
            wait_for("Prometheus scraping Karpenter", prometheus.scraping_karpenter, 90, interval_s=1)
            hami_job = f"{hami.fullname}-scheduler"
            wait_for("Prometheus scraping HAMi's scheduler", lambda: prometheus.scraping(hami_job), 90, interval_s=1)
            agent.start()
            if isinstance(workload, Workload):
                print(f"e2e: simulating {args.simulate} on the {running_stack} stack", file=sys.stderr, flush=True)
                simulation = simulate(ctx, workload)
            elif workload is not None:
                print(
                    f"e2e: a {workload.hours} h day of {args.simulate} on {running_stack} ({args.variant}, run "
                    f"{args.run}), {workload.seconds_per_hour} s per simulated hour",
                    file=sys.stderr,
                    flush=True,
                )
                seen = Day(ctx, workload, plans[running_stack]).run()
                seen.wall_seconds = time.monotonic() - started  # the rig's start-up included: what a user waits
                pools = Pools(plans[running_stack], catalog, hami)
                identity = {"trace": str(args.simulate), "variant": args.variant, "run": args.run}
                simulation = run_document(workload, seen, pools, oracle_per_step(workload, pools), identity)
            for name in [n for n in selected if n not in BEFORE_STACK]:
                results.append(_run_one(name, ctx))
                if agent.failure:
                    raise RigError(f"the node agent stopped: {agent.failure}")
    except KeyboardInterrupt:
        print("e2e: interrupted; stopping the rig", file=sys.stderr)
        return 130
    except (RigError, KubectlError, ApiError) as error:
        print(f"e2e: {error}", file=sys.stderr)
        return 2
    finally:
        # A second Ctrl-C or SIGTERM must not cut the clean-up short: that would leave the rig running.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if agent is not None and agent.is_alive():
            agent.stop()
        rig.stop()
        # Every process's log is evidence (which GPU HAMi chose, why a pod stayed pending): kept each run in
        # build/e2e/logs; the data directories (etcd, TSDB) go.
        _keep_logs(rig)
        shutil.rmtree(work, ignore_errors=True)
    elapsed = time.monotonic() - started
    if simulation is not None and isinstance(workload, Trace):
        RUNS_DIR.mkdir(parents=True, exist_ok=True)
        stem = f"simulate-{args.variant}-run{args.run}"
        (RUNS_DIR / f"{stem}.json").write_text(json.dumps(simulation, indent=2, sort_keys=True) + "\n")
        plot(simulation, REPORT_DIR / f"{stem}.png")
        return 0
    if simulation is not None:
        REPORT_DIR.mkdir(parents=True, exist_ok=True)
        (REPORT_DIR / "simulate.json").write_text(json.dumps(simulation, indent=2, sort_keys=True) + "\n")
        print(simulation_table(simulation))
        return 0
    report.write(REPORT_DIR, results, elapsed)
    print(report.table(results, elapsed))
    return 0 if all(result.passed for result in results) else 1


def _start_hami(rig: Rig, kubectl: Kubectl, release: HamiRelease, device_config: Path) -> None:
    """HAMi's scheduler and its kube-scheduler as the release renders them, and its MutatingWebhookConfiguration,
    which reaches the extender on loopback (the chart names its Service: the rig has no Service routing)."""
    cert = rig.start_hami(release, device_config)
    url = f"https://127.0.0.1:{release.extender_port}/webhook"
    kubectl.apply([release.mutating_webhook(url, base64.b64encode(cert.read_bytes()).decode())])
    wait_for("HAMi's scheduler extender serving", lambda: _serving(rig, release), 90)


def _serving(rig: Rig, release: HamiRelease) -> bool:
    if not rig.alive("hami-scheduler"):
        raise RigError(f"hami-scheduler exited; see {rig.log_dir / 'hami-scheduler.log'}")
    tls = ssl.create_default_context()
    tls.check_hostname = False
    tls.verify_mode = ssl.CERT_NONE
    scheme = "https" if release.webhook_enabled else "http"
    try:
        with urllib.request.urlopen(f"{scheme}://127.0.0.1:{release.extender_port}/healthz", context=tls, timeout=5):
            return True
    except OSError:
        return False


def _write_device_configs(rig: Rig, plans: dict[str, Plan], running: str) -> dict[str, Path]:
    """Stack -> the device config its HAMi release renders (the running stack's is the one HAMi's scheduler reads)."""
    configs = {}
    rig.hami_dir.mkdir(parents=True, exist_ok=True)
    for stack, plan in plans.items():
        release = HamiRelease.from_values(plan.helm_values[names.HAMI_RELEASE])
        configs[stack] = rig.hami_dir / ("device-config.yaml" if stack == running else f"device-config-{stack}.yaml")
        configs[stack].write_text(yaml.safe_dump(release.device_config()))
    return configs


def _start_hami_node(rig: Rig, config: Path, node: str, itype: InstanceType) -> None:
    """rig-gpu-node for a HAMi pool's node: its GPUs as NVML would report them, the release's device config (the
    one the chart mounts into HAMi's device plugin and the mock), and the real mock device plugin."""
    model = load_catalog().gpu_model_of(itype)
    rig.start_gpu_node(
        node,
        [
            f"--node={node}",
            f"--kubeconfig={rig.kubeconfig}",
            f"--device-config={config}",
            f"--gpus={itype.gpu_count}",
            f"--gpu-memory-mib={model.nvml_memory_mib}",
            f"--gpu-name=NVIDIA {model.name}",
            f"--mock={rig.binary('mock-device-plugin')}",
            f"--mock-device-config={config}",
        ],
    )


def _has_default_sa(kubectl: Kubectl) -> bool:
    try:
        kubectl.run("get", "serviceaccount", "default", "-n", "default")
    except KubectlError:
        return False
    return True


def _run_one(name: str, ctx: Context) -> Result:
    print(f"e2e: {name} ...", file=sys.stderr, flush=True)
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
            print(f"e2e:   {line}", file=sys.stderr)
    if not result.passed:
        _reset(ctx)
    result.figures["scenario_seconds"] = round(time.monotonic() - started, 1)
    print(f"e2e: {'PASS' if result.passed else 'FAIL'} {name}: {result.summary}", file=sys.stderr, flush=True)
    return result


def _reset(ctx: Context) -> None:
    """After a failed scenario: delete every workload in the running stack's team namespaces and wait until
    Karpenter has removed every node, so the next scenario starts from the state the others leave."""
    teams = [ns["metadata"]["name"] for ns in ctx.plans[RUNNING_STACK].of_kind("Namespace")]
    for team in teams:
        ctx.kubectl.run("delete", "deployments,jobs,pods", "--all", "-n", team, "--wait=true", "--timeout=120s")
    wait_for("every NodeClaim gone after a failed scenario", lambda: not nodeclaims(ctx), 300, interval_s=2)


def _keep_logs(rig: Rig) -> None:
    target = REPORT_DIR / "logs"
    shutil.rmtree(target, ignore_errors=True)
    if rig.log_dir.exists():
        shutil.copytree(rig.log_dir, target)


if __name__ == "__main__":
    sys.exit(run(parse_args(sys.argv[1:])))
