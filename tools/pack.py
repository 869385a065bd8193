"""`make pack WORKLOAD=<mix file> [STACK=...]`: the cheapest nodes for a fixed mix of HAMi pods, proven, without a
cluster: per pool the nodes by type, $/h, GPU memory and cores used against what the nodes register, the solver's
lower bound and gap, and beside them what first-fit and one pod per whole GPU cost (docs/packing.md).

    python -m tools.pack --workload examples/workloads/inference-mix.yaml [--stack prod] [--out build]
    python -m tools.pack --workload pods.csv --mapping mapping.yaml --at 14:00

The mix is read and validated as `make simulate` reads it (bad input: one line per problem, exit 2, nothing
written); `--stack` packs the same pods on another stack's pools. With `--mapping` the workload is a pod list
`make simulate` replays, and the pods it has alive at `--at` (a time of the replayed day) are packed on the
mapping's stack. The figures also go to <out>/pack.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from e2e.simulator.demand import Demand, PodRequests, clock
from e2e.simulator.exact import INFEASIBLE, UNKNOWN, Limit, exact_packing
from e2e.simulator.group_checks import stack_config
from e2e.simulator.hami_rules import placement_problems
from e2e.simulator.mix import TRACE_KEYS, Workload, pod_shapes, pool_kinds, workload_problems
from e2e.simulator.oracle import pod_shape
from e2e.simulator.packing import NodeType, PodShape, best_packing
from e2e.simulator.replay import load_replay
from gpushare.catalog import load_catalog
from gpushare.errors import EXIT_BAD_INPUT, UserError
from gpushare.files import read_yaml
from gpushare.paths import PROJECT_ROOT
from gpushare.stackfile import read_stack_file


def load(path: Path, stack: str | None) -> tuple[Workload, dict[str, Any]]:
    """The mix (its stack replaced by `stack` when given) and that stack's config map; UserError lists every
    problem."""
    raw = read_yaml(path)
    trace_keys = [key for key in TRACE_KEYS if isinstance(raw, dict) and key in raw]
    if trace_keys:
        raise UserError(
            f"{path}: {', '.join(trace_keys)}: a trace of a day has these keys; make pack takes a fixed mix (a stack "
            "and pod groups, examples/workloads/*-mix.yaml)"
        )
    if stack is not None and isinstance(raw, dict):
        raw = {**raw, "stack": stack}
    name = raw.get("stack") if isinstance(raw, dict) else None
    config = read_stack_file(PROJECT_ROOT / f"Pulumi.{name}.yaml") if name in ("dev", "prod") else None
    problems = workload_problems(raw, config)
    if problems:
        raise UserError("\n".join(f"{path}: {problem}" for problem in problems))
    return Workload.model_validate(raw), config or {}


def _whole_gpus(pods: list[PodShape], kinds: list[NodeType]) -> float:
    """Each pod on GPUs of its own, at the pool's cheapest price per GPU."""
    per_gpu = min(kind.usd_per_hour / kind.gpus for kind in kinds)
    return round(sum(pod.vgpus for pod in pods) * per_gpu, 3)


def pool_report(pool: str, pods: list[PodShape], kinds: list[NodeType], limit: Limit) -> dict[str, Any]:
    """One pool's packing and the figures beside it."""
    started = time.perf_counter()
    packing = exact_packing(pods, kinds, limit)
    seconds = time.perf_counter() - started
    if packing.status in (INFEASIBLE, UNKNOWN):
        why = "no packing exists" if packing.status == INFEASIBLE else "the solver found none within its time limit"
        raise UserError(f"pool {pool}: {len(pods)} pods, {why} within the pool's NodePool limit of {limit[0]}")
    problems = placement_problems(packing, pods, limit)
    if problems:  # a solver or model defect, never the user's: refuse to print a packing HAMi could not place
        raise AssertionError("the packing breaks HAMi's rules: " + "; ".join(problems))
    paid_memory = sum(n.kind.gpus * n.kind.gpu_memory_mib for n in packing.nodes)
    paid_cores = sum(n.kind.gpus * n.kind.gpu_cores for n in packing.nodes)
    first_fit = best_packing(pods, kinds)
    return {
        "pods": len(pods),
        "status": packing.status,
        "nodes_by_type": packing.nodes_by_type(),
        "usd_per_hour": round(packing.usd_per_hour, 3),
        "lower_bound_usd_per_hour": round(packing.lower_bound_usd, 3),
        "gap_percent": round(100 * packing.gap, 2),
        "gpu_memory_mib": {"used": sum(p.vgpus * p.gpu_memory_mib for p in pods), "paid": paid_memory},
        "gpu_cores": {"used": sum(p.vgpus * p.gpu_cores for p in pods), "paid": paid_cores},
        "first_fit_usd_per_hour": first_fit[0] if first_fit else None,
        "first_fit_nodes_by_type": first_fit[1] if first_fit else {},
        "one_pod_per_whole_gpu_usd_per_hour": _whole_gpus(pods, kinds),
        "limit": {"allowed": limit[0], "used": sum(limit[1].get(n.kind.name, 0) for n in packing.nodes)},
        "seconds": round(seconds, 2),
    }


def _at_minute(text: str, hours: int) -> float | None:
    """`HH:MM` as a minute of a replayed day of `hours` hours, or None when it is not one."""
    parts = text.split(":")
    if len(parts) != 2 or not all(part.isdigit() and len(part) == 2 for part in parts):
        return None
    minute = int(parts[0]) * 60 + int(parts[1])
    return float(minute) if int(parts[1]) < 60 and minute < hours * 60 else None


def load_moment(pods: Path, mapping: Path, at: str) -> tuple[Demand, float]:
    """The replayed day (validated as `make simulate` validates it) and `at` as its minute; UserError lists every
    problem, the list's and the mapping's with `--at`'s."""
    configs = {stack: read_stack_file(PROJECT_ROOT / f"Pulumi.{stack}.yaml") for stack in ("dev", "prod")}
    problems: list[str] = []
    try:
        demand = load_replay(pods, mapping, configs)
    except UserError as error:
        problems += str(error).splitlines()
        demand = None
    minute = _at_minute(at, demand.hours if demand is not None else 24)
    if minute is None:
        hours = demand.hours if demand is not None else 24
        problems.append(
            f"--at: {at!r} is not a time of the replayed day; write HH:MM from 00:00 to {clock(hours * 60 - 1)}"
        )
    if problems or demand is None or minute is None:
        raise UserError("\n".join(problems))
    return demand, minute


def moment_pods(demand: Demand, minute: float, sharing: dict[str, str]) -> dict[str, list[PodShape]]:
    """Pool -> the pods the day has alive at `minute`, as asked (each replayed pod from its creation to its
    deletion; a Deployment at its count then), not what a quota would admit."""
    alive: list[PodRequests] = []
    for batch in demand.batches:
        if batch.minute <= minute < batch.ends:
            alive += [batch.group] * batch.count
    counts: dict[str, tuple[PodRequests, int]] = {}
    for change in sorted(demand.changes, key=lambda change: change.minute):
        if change.minute <= minute:
            counts[change.group.name] = (change.group, change.replicas)
    alive += [group for group, replicas in counts.values() for _ in range(replicas)]
    found: dict[str, list[PodShape]] = {}
    for group in alive:
        found.setdefault(group.pool, []).append(pod_shape(group, sharing[group.pool]))
    return found


def mix_pods(workload: Workload) -> dict[str, list[PodShape]]:
    """Pool -> the mix's pods on it."""
    return {pool: pod_shapes(workload, pool) for pool in sorted({group.pool for group in workload.pods})}


def pack(stack: str, pods: dict[str, list[PodShape]], config: dict[str, Any]) -> dict[str, Any]:
    """Every pool's pods packed; totals over them."""
    parsed = stack_config(config)
    if parsed is None:
        raise UserError(f"Pulumi.{stack}.yaml does not load: `make plan STACK={stack}` names why")
    kinds = pool_kinds(parsed, load_catalog())
    pools = {pool: pool_report(pool, pods[pool], *kinds[pool]) for pool in sorted(pods)}
    totals = {
        key: round(sum(p[key] or 0 for p in pools.values()), 3)
        for key in (
            "usd_per_hour",
            "lower_bound_usd_per_hour",
            "first_fit_usd_per_hour",
            "one_pod_per_whole_gpu_usd_per_hour",
        )
    }
    return {"stack": stack, "pools": pools, "total": totals}


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def table(result: dict[str, Any]) -> str:
    moment = result.get("moment")
    where = f": the pods {moment['pods']} has alive at {moment['at']}" if moment else ""
    lines = [f"stack {result['stack']}{where}"]
    if not result["pools"]:
        lines.append("no pods to pack")
    for name, pool in result["pools"].items():
        nodes = ", ".join(f"{n} x {t}" for t, n in pool["nodes_by_type"].items()) or "none"
        first_fit = ", ".join(f"{n} x {t}" for t, n in pool["first_fit_nodes_by_type"].items()) or "none"
        memory, cores = pool["gpu_memory_mib"], pool["gpu_cores"]
        proof = "optimal" if pool["status"] == "optimal" else f"{pool['status']}, gap {pool['gap_percent']}%"
        lines += [
            f"pool {name}: {pool['pods']} pods on {nodes}: ${pool['usd_per_hour']}/h ({proof}; lower bound "
            f"${pool['lower_bound_usd_per_hour']}/h; {pool['seconds']} s)",
            f"  GPU memory {memory['used']} of {memory['paid']} MiB paid ({_percent(memory['used'], memory['paid'])}),"
            f" GPU cores {cores['used']} of {cores['paid']} ({_percent(cores['used'], cores['paid'])}); limit "
            f"{pool['limit']['used']} of {pool['limit']['allowed']}",
            f"  first-fit: ${pool['first_fit_usd_per_hour']}/h on {first_fit}; one pod per whole GPU: "
            f"${pool['one_pod_per_whole_gpu_usd_per_hour']}/h",
        ]
    total = result["total"]
    lines.append(
        f"total: ${total['usd_per_hour']}/h (lower bound ${total['lower_bound_usd_per_hour']}/h; first-fit "
        f"${total['first_fit_usd_per_hour']}/h; one pod per whole GPU ${total['one_pod_per_whole_gpu_usd_per_hour']}/h)"
    )
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> dict[str, Any]:
    """The packing the arguments ask for: a fixed mix, or a replayed pod list's moment."""
    if args.mapping is None:
        if args.at is not None:
            raise UserError("--at: a moment of a replayed day; give the pod list's --mapping with it")
        workload, config = load(args.workload, args.stack)
        return pack(workload.stack, mix_pods(workload), config)
    if args.stack is not None or args.at is None:
        raise UserError(
            "--mapping: a replayed pod list is packed at one moment (--at HH:MM) on its mapping's stack (no --stack)"
        )
    demand, minute = load_moment(args.workload, args.mapping, args.at)
    config = read_stack_file(PROJECT_ROOT / f"Pulumi.{demand.stack}.yaml")
    parsed = stack_config(config)
    sharing = {pool.name: pool.sharing for pool in parsed.pools} if parsed is not None else {}
    result = pack(demand.stack, moment_pods(demand, minute, sharing), config)
    return {**result, "moment": {"pods": str(args.workload), "mapping": str(args.mapping), "at": args.at}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make pack", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workload",
        type=Path,
        required=True,
        help="a fixed mix (examples/workloads/*-mix.yaml), or with --mapping a pod list",
    )
    parser.add_argument("--stack", choices=("dev", "prod"), help="pack a mix on this stack's pools (default: its own)")
    parser.add_argument("--mapping", type=Path, help="the pod list's mapping file, as make simulate replays it")
    parser.add_argument("--at", help="with --mapping: the moment of the replayed day whose pods are packed (HH:MM)")
    parser.add_argument("--out", type=Path, default=Path("build"), help="output folder (default: build)")
    args = parser.parse_args(argv)
    try:
        result = _run(args)
    except UserError as error:
        for line in str(error).splitlines():
            print(f"error: {line}", file=sys.stderr)
        return EXIT_BAD_INPUT
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "pack.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(table(result))
    print(f"figures: {args.out / 'pack.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
