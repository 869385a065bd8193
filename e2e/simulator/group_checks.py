"""The checks every file of GPU demand shares (a trace, a replayed pod list's mapping, a fixed mix): each group's
team and pool are the stack's, and some node of its pool can hold one of its pods, judged by the stack's own
capacity model (gpushare.capacity, the one the admission bound and the policy pack use) and the catalog.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from e2e.simulator.demand import PodRequests, quantity_mib, quantity_millis
from gpushare import names
from gpushare.capacity import pool_plans
from gpushare.catalog import Catalog, load_catalog
from gpushare.config import StackConfig
from gpushare.eks import FIXED_PLAN_DAY
from gpushare.errors import UserError
from gpushare.loader import load_stack_config

# Karpenter's kwok provider reserves this much of every node (kwok/cloudprovider/helpers.go KubeReserved): a pod
# asking a node's whole CPU or memory never fits the rig's node.
KWOK_RESERVED_CPU_MILLIS = 100
KWOK_RESERVED_MEMORY_MIB = 10


@dataclass(frozen=True)
class NodeRoom:
    """One instance type of a pool as a pod sees it: GPUs (with HAMi, each GPU's registered memory and cores), and
    the CPU and memory the rig's node offers pods."""

    instance_type: str
    gpus: int
    gpu_memory_mib: int
    gpu_cores: int
    cpu_millis: int
    memory_mib: int


@dataclass(frozen=True)
class PoolRoom:
    """A pool as the trace validator judges it: how it shares GPUs and what each of its instance types holds."""

    name: str
    sharing: str
    rooms: tuple[NodeRoom, ...]

    def holds(self, group: PodRequests) -> list[tuple[str, str]]:
        """(key, problem) for each request no node of the pool can ever hold; empty when some type holds the pod."""
        problems: list[tuple[str, str]] = []
        hami = self.sharing == names.SHARING_HAMI
        timeslice = self.sharing == names.SHARING_TIMESLICE
        if hami:
            for key, value in (("gpuMemoryMib", group.gpu_memory_mib), ("gpuCores", group.gpu_cores)):
                if value is None:
                    problems.append((key, f"required on pool {self.name} (HAMi-shared): the rig would ask 0"))
        if timeslice and group.vgpus > 1:
            problems.append(
                (
                    "vgpus",
                    f"{group.vgpus} on pool {self.name} (time-sliced): a container gets one replica (the team's "
                    "per-GPU policy refuses more); allowed: 1",
                )
            )
        asks = self._asks(group)
        for key, (asked, offered) in asks.items():
            best = max(self.rooms, key=offered)
            if asked > offered(best):
                problems.append((key, f"{_shown(key, asked)} is more than {_offer(key, best, offered(best))}"))
        if not problems and not any(all(a <= offered(room) for a, offered in asks.values()) for room in self.rooms):
            wanted = ", ".join(f"{key} {_shown(key, asked)}" for key, (asked, _) in asks.items())
            problems.append(("(group)", f"no instance type of pool {self.name} holds {wanted} on one node"))
        return problems

    def _asks(self, group: PodRequests) -> dict[str, tuple[int, Callable[[NodeRoom], int]]]:
        """Key -> (what one pod asks, what one node of a type offers it)."""
        asks: dict[str, tuple[int, Callable[[NodeRoom], int]]] = {
            "cpu": (quantity_millis(group.cpu), lambda room: room.cpu_millis),
            "memory": (quantity_mib(group.memory), lambda room: room.memory_mib),
        }
        if self.sharing != names.SHARING_TIMESLICE:  # one replica per container, checked above
            asks["vgpus"] = (group.vgpus, lambda room: room.gpus)
        if self.sharing == names.SHARING_HAMI:
            asks["gpuMemoryMib"] = (group.gpu_memory_mib or 0, lambda room: room.gpu_memory_mib)
            asks["gpuCores"] = (group.gpu_cores or 0, lambda room: room.gpu_cores)
        return asks


def _shown(key: str, amount: int) -> str:
    return {"cpu": f"{amount}m", "memory": f"{amount}Mi"}.get(key, str(amount))


def _offer(key: str, room: NodeRoom, amount: int) -> str:
    what = {
        "vgpus": f"{amount} GPU(s) per node",
        "cpu": f"{amount}m CPU for pods",
        "memory": f"{amount}Mi memory for pods",
        "gpuMemoryMib": f"{amount} MiB per GPU as HAMi registers it",
        "gpuCores": f"{amount} cores per GPU",
    }[key]
    return f"any node of the pool offers (at most {what}, on {room.instance_type})"


def pool_rooms(config: StackConfig, catalog: Catalog | None = None) -> dict[str, PoolRoom]:
    """Pool name -> what its nodes can hold, from the stack's own capacity model (gpushare.capacity: what each
    HAMi node registers per GPU, as the admission bound and the pack compute it) and the catalog."""
    catalog = catalog or load_catalog()
    plans = pool_plans(config)
    rooms = {}
    for pool in config.pools:
        per_type = {c.instance_type: c for c in plans[pool.name].capacities}
        found = []
        for name in pool.instance_types:
            itype = catalog.instance_type(name)
            hami = per_type.get(name)
            found.append(
                NodeRoom(
                    name,
                    itype.gpu_count,
                    hami.vgpu_max_memory_mib if hami else 0,
                    hami.gpu_cores // hami.gpus if hami else 0,
                    itype.vcpu * 1000 - KWOK_RESERVED_CPU_MILLIS,
                    itype.memory_mib - KWOK_RESERVED_MEMORY_MIB,
                )
            )
        rooms[pool.name] = PoolRoom(pool.name, pool.sharing, tuple(found))
    return rooms


def stack_config(raw: dict[str, Any]) -> StackConfig | None:
    """The stack config as the program reads it (judged for the rig's plan day), or None when it does not load:
    the program's own check of that config names its problems."""
    try:
        return load_stack_config(raw, today=FIXED_PLAN_DAY)
    except UserError:
        return None


def named_entries(config: dict[str, Any], key: str) -> dict[str, dict[str, Any]]:
    """Name -> entry of a list of named maps of the stack's `config` map (`gpushare:pools`, `gpushare:teams`)."""
    return {entry["name"]: entry for entry in config.get(key, []) if isinstance(entry, dict) and "name" in entry}


def team_pool_problem(stack: str, config: dict[str, Any], team: str, pool: str) -> tuple[str, str] | None:
    """("team" or "pool", problem) when the stack has no such team, or the team no such pool; None when it has."""
    teams = named_entries(config, "gpushare:teams")
    if team not in teams:
        return "team", f"{team!r} is not a team of {stack}; allowed: " + ", ".join(sorted(teams))
    pools = teams[team].get("pools", [])
    if pool not in pools:
        return "pool", f"{pool!r} is not a pool of team {team}; allowed: " + ", ".join(pools)
    return None


def group_problems(stack: str, config: dict[str, Any], groups: list[tuple[str, PodRequests]]) -> list[tuple[str, str]]:
    """(key, problem) for each group whose team or pool the stack lacks, or whose pool can never hold its pods."""
    parsed = stack_config(config)
    rooms = pool_rooms(parsed) if parsed is not None else {}
    problems = []
    for where, group in groups:
        wrong = team_pool_problem(stack, config, group.team, group.pool)
        if wrong is not None:
            problems.append((f"{where}.{wrong[0]}", wrong[1]))
        elif group.pool in rooms:
            for key, problem in rooms[group.pool].holds(group):
                problems.append((f"{where}.{key}" if key != "(group)" else where, problem))
    return problems
