"""Offline plan: run the stack under Pulumi's mocks and write what it would create to build/<stack>/.

    python -m tools.plan --config Pulumi.dev.yaml --out build [--date 2026-11-26]

Writes plan.json (every resource with type, parent, dependencies, provider and inputs), summary.json (what it
builds and costs, tools/summary.py), manifests/ (each Kubernetes object the stack creates directly), helm/ (each
release's chart, version and values), and prints the pools, resources, teams, costs and EC2 quotas, then evaluates
the policy pack: violations go into plan.json and to stdout, and a mandatory one makes the exit code 1 (the plan
is still written, in place of any earlier one, to inspect). Bad input: one line per problem on stderr, exit code 2,
nothing written, and the stack's earlier build/<stack>/ removed. `--date` (default today, UTC) is the day EKS
support windows are judged for: the same stack file and date give the same plan.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

from gpushare import names
from gpushare.capacity import PodShape, headroom_fits, headroom_nodes, pool_plans, stack_headroom
from gpushare.catalog import load_catalog
from gpushare.config import StackConfig
from gpushare.costs import HELM_TYPE
from gpushare.errors import EXIT_BAD_INPUT, UserError
from gpushare.loader import load_stack_config
from gpushare.render.releases import object_id
from gpushare.render.yamlio import dump
from gpushare.stackfile import read_stack_file
from tools.check import EXIT_MANDATORY, add_date_option, check, policy_config_for, report
from tools.offline import run_program
from tools.summary import SUMMARY_FILE, stack_summary, summary_lines, table

# What one unit of a pool's NodePool limit is, by sharing.
LIMIT_UNITS = {
    names.SHARING_HAMI: "vGPUs: maxGpus x deviceSplitCount",
    names.SHARING_TIMESLICE: "time-sliced replicas: maxGpus x replicas",
    names.SHARING_EXCLUSIVE: "whole GPUs",
}


def stack_name(config_path: Path) -> str:
    """Pulumi.dev.yaml -> dev; any other file -> its stem."""
    parts = config_path.name.split(".")
    return parts[1] if len(parts) == 3 and parts[0] == "Pulumi" else config_path.stem


def build_plan(raw: dict[str, Any], stack: str, today: date) -> tuple[StackConfig, dict[str, Any]]:
    config = load_stack_config(raw, today=today)
    monitor = run_program(raw, stack, today)
    resources = sorted(monitor.recorded, key=lambda r: r["urn"])
    plan = {"project": "gpushare", "stack": stack, "resources": resources, "outputs": monitor.outputs, "violations": []}
    return config, plan


def kubernetes_manifests(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """File name -> object, for every Kubernetes object the stack declares directly (not via Helm)."""
    manifests = {}
    for resource in plan["resources"]:
        if not resource["type"].startswith("kubernetes:") or resource["type"] == HELM_TYPE:
            continue
        manifests[f"{object_id(resource['inputs'])}.yaml"] = resource["inputs"]
    return manifests


def helm_files(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    files = {}
    for resource in plan["resources"]:
        if resource["type"] == HELM_TYPE:
            inputs = resource["inputs"]
            files[f"{inputs['name']}.yaml"] = {
                "name": inputs["name"],
                "namespace": inputs["namespace"],
                "chart": inputs["chart"],
                "version": inputs["version"],
                "repository": inputs.get("repositoryOpts", {}).get("repo"),
                "values": inputs.get("values", {}),
            }
    return files


def write_plan(plan: dict[str, Any], figures: dict[str, Any], folder: Path) -> None:
    """Write into a temporary folder and swap it in, so a failure never leaves a half-written plan."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    (staging / "plan.json").write_text(json.dumps(plan, indent=2, sort_keys=True) + "\n")
    (staging / SUMMARY_FILE).write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    for sub, files in (("manifests", kubernetes_manifests(plan)), ("helm", helm_files(plan))):
        (staging / sub).mkdir()
        for name, body in sorted(files.items()):
            (staging / sub / name).write_text(dump(body))
    if folder.exists():
        shutil.rmtree(folder)
    staging.rename(folder)


def remove_stale_plan(folder: Path) -> None:
    """A refused stack file leaves no earlier plan of its stack behind: `make check` on it would pass as if it were
    the plan of the file just refused. (A plan the pack refuses, exit 1, is written in its place, to inspect: its
    violations are in it and `make check` refuses it again.)"""
    if folder.is_dir():
        shutil.rmtree(folder)


def pod_text(shape: PodShape) -> str:
    """`1 vGPU 7676 MiB 33% + 1 CPU 4096 MiB`: what one warm pod asks."""
    gpu = shape.gpu
    if names.GPU_SHARED in gpu:
        parts = [f"{gpu[names.GPU_SHARED]} replica"]
    else:
        parts = [f"{gpu[names.GPU]} {'vGPU' if names.GPU_CORES in gpu else 'GPU'}"]
        parts += [f"{gpu[names.GPU_MEMORY]} MiB"] if names.GPU_MEMORY in gpu else []
        parts += [f"{gpu[names.GPU_CORES]}%"] if names.GPU_CORES in gpu else []
    cpu = shape.cpu_millis / 1000
    return f"{' '.join(parts)} + {cpu:g} CPU {shape.memory_mib} MiB"


def headroom_summary(config: StackConfig) -> list[str]:
    """Per team and pool: the warm pods, the cheapest whole nodes that keep them (what Karpenter launches for the
    buffer alone) and what those cost while they wait; nothing when no team keeps headroom."""
    rows: list[tuple[str, ...]] = [("team", "pool", "warm pods", "each", "nodes kept", "USD/h", "USD/day")]
    for headroom in stack_headroom(config):
        cover = headroom_nodes(headroom_fits(config, headroom), headroom.pods)
        if cover is None:
            continue  # config refuses headroom no node holds
        price, nodes = cover
        kept = ", ".join(f"{count} x {name}" for name, count in sorted(nodes.items()))
        rows.append(
            (
                headroom.team,
                headroom.pool,
                str(headroom.pods),
                pod_text(headroom.shape),
                kept,
                f"{price:.3f}",
                f"{price * 24:.2f}",
            )
        )
    if len(rows) == 1:
        return []
    return [
        "",
        "warm headroom (CapacityBuffers; at these prices): no team quota is charged for it, its nodes bill while they "
        "wait",
        *table(rows),
    ]


def summary(config: StackConfig) -> str:
    """Per pool and instance type: what one node offers (shares: vGPUs or time-sliced replicas), how many the
    limit admits, what it costs; then each team's warm headroom and what its nodes cost."""
    catalog = load_catalog()
    header = (
        "pool",
        "sharing",
        "instance type",
        "GPUs",
        "shares",
        "gpumem MiB",
        "gpucores",
        "nodes if alone",
        "USD/node-h",
    )
    rows: list[tuple[str, ...]] = [header]
    for plan in pool_plans(config).values():
        capacities = {c.instance_type: c for c in plan.capacities}
        for node in plan.nodes:
            type_name = node.instance_type
            itype = catalog.instance_type(type_name)
            cap = capacities.get(type_name)
            rows.append(
                (
                    plan.name,
                    plan.sharing,
                    type_name,
                    str(itype.gpu_count),
                    str(node.resources[plan.limit_resource]) if plan.overlaid else "-",
                    str(cap.gpu_memory_mib) if cap else "-",
                    str(cap.gpu_cores) if cap else "-",
                    str(plan.nodes_admitted(type_name)),
                    f"{itype.on_demand_usd_per_hour:.3f}",
                )
            )
    lines = table(rows)
    prices = catalog.prices
    lines.append(
        f"prices: {prices.region} {prices.capacity_type}, {prices.date}; nodes if alone = how many nodes of that type "
        "the pool's limit admits when the pool runs no other type (its types share one limit: see maxGpus below)"
    )
    for plan in pool_plans(config).values():
        lines.append(
            f"{plan.name}: maxGpus {plan.max_gpus} physical GPUs = NodePool limit {plan.limit_resource}: "
            f"{plan.node_pool_limit} ({LIMIT_UNITS[plan.sharing]})"
        )
    if any(plan.capacities for plan in pool_plans(config).values()):
        factor = config.hami.profile.memory_factor
        lines.append(
            f"HAMi pools: pods request nvidia.com/gpumem, and team quotas count it, in units of {factor} MiB "
            f"(memoryFactor {factor}); a node registers gpumem MiB / {factor}"
        )
    return "\n".join(lines + headroom_summary(config))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make plan", description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True, help="stack file, e.g. Pulumi.dev.yaml")
    parser.add_argument("--out", type=Path, default=Path("build"), help="output folder (default: build)")
    parser.add_argument("--policy-config", type=Path, help="policy config JSON (default: policies/config/<stack>.json)")
    add_date_option(parser)
    args = parser.parse_args(argv)
    stack = stack_name(args.config)
    folder = args.out / stack
    try:
        raw = read_stack_file(args.config)
        policy_config, policy_config_path = policy_config_for(stack, args.policy_config)
        config, plan = build_plan(raw, stack, args.date)
        violations = check(plan["resources"], policy_config, args.date)
    except UserError as error:
        for line in str(error).splitlines():  # a config can have several problems: one line each
            print(f"error: {line}", file=sys.stderr)
        remove_stale_plan(folder)
        return EXIT_BAD_INPUT
    plan["violations"] = [v.as_dict() for v in violations]
    figures = stack_summary(config, plan)
    write_plan(plan, figures, folder)
    print(summary(config))
    print("\n".join(summary_lines(figures)))
    print(f"plan: {folder / 'plan.json'} ({len(plan['resources'])} resources), figures: {folder / SUMMARY_FILE}")
    print(report(violations, policy_config_path))
    return EXIT_MANDATORY if any(v.level == "mandatory" for v in violations) else 0


if __name__ == "__main__":
    sys.exit(main())
