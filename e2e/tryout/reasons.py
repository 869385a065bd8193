"""Why a workload's pod was refused or left pending, in the user's words, and what to change.

Each refusal class is matched on what the API server (admission policies, ResourceQuota), HAMi's scheduler,
kube-scheduler and Karpenter said about the pod, and worded with the team's pools as the domain layer plans them
(the GPU models and sizes of its pools, what one container may ask on each, the largest node): the words say which
number is too big and what it may be. A few classes are judged from the manifest alone where the cluster's message
is a generic one (a GPU type HAMi's annotation asks for that no pool has; a CPU or memory request no node type of
the pool holds, which Karpenter words as "no instance type has enough resources").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from e2e.tryout.manifests import containers, quantity
from gpushare import names
from gpushare.capacity import pool_container_limits, pool_plans
from gpushare.catalog import Catalog
from gpushare.config import StackConfig

# HAMi's pod annotations naming GPU types to use or avoid (a substring of the GPU's type, any case: HAMi v2.10.0
# pkg/device/nvidia/device.go checkType).
USE_GPU_TYPE = "nvidia.com/use-gputype"
NOUSE_GPU_TYPE = "nvidia.com/nouse-gputype"
PER_CONTAINER = re.compile(r"(nvidia\.com/[a-z.-]+) per container must be at most (\d+)")
QUOTA_USE = re.compile(r"requested: ([^,]+=[^,]+(?:,[^,:]+=[^,]+)*), used: (\S+), limited: (\S+)")
# HAMi's filter reasons (pkg/device/common/common.go) for a node whose GPUs have no room left for the pod.
GPU_FULL = ("CardInsufficientMemory", "CardInsufficientCore", "AllocatedCardsInsufficientRequest",
            "NodeInsufficientDevice", "CardTimeSlicingExhausted")  # fmt: skip
# The events in which the schedulers (kube-scheduler, HAMi's) and Karpenter say why a pod is not placed.
SCHEDULING_REASONS = ("FailedScheduling", "FilteringFailed")
# Pending verdicts no wait can change: they follow from what the pod asks and the pools' GPUs and node types, not
# from what the cluster holds at the moment.
FINAL = frozenset({"gpu-type", "node-size"})


@dataclass(frozen=True)
class PoolView:
    """One of the team's pools as a pod sees it."""

    name: str
    sharing: str
    gpu_models: tuple[str, ...]
    largest_type: str
    largest_vcpu: int
    largest_memory_mib: int
    limits: Mapping[str, int]
    max_gpus: int


@dataclass(frozen=True)
class TeamView:
    name: str
    pools: tuple[PoolView, ...]

    def pool(self, name: str | None) -> PoolView | None:
        return next((pool for pool in self.pools if pool.name == name), None)


def team_view(config: StackConfig, catalog: Catalog, team: str) -> TeamView:
    """The team's pools, from the domain layer's pool plans and the catalog."""
    plans = pool_plans(config)
    [wanted] = [t for t in config.teams if t.name == team]
    pools = []
    for name in wanted.pools:
        plan = plans[name]
        itypes = [catalog.instance_type(node.instance_type) for node in plan.nodes]
        largest = max(itypes, key=lambda itype: (itype.vcpu, itype.memory_mib))
        models = tuple(dict.fromkeys(catalog.gpu_model_of(itype).name for itype in itypes))
        pools.append(
            PoolView(
                name,
                plan.sharing,
                models,
                largest.name,
                largest.vcpu,
                largest.memory_mib,
                pool_container_limits(plan),
                plan.max_gpus,
            )
        )
    return TeamView(team, tuple(pools))


def messages_about(pod: dict[str, Any], events: list[dict[str, Any]]) -> list[str]:
    """What the schedulers and Karpenter said about the pod, oldest first, then its PodScheduled condition."""
    uid = pod["metadata"]["uid"]
    said = sorted(
        (e for e in events if e.get("involvedObject", {}).get("uid") == uid and e.get("reason") in SCHEDULING_REASONS),
        key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""),
    )
    lines = [str(e.get("message", "")) for e in said]
    condition = next(
        (c for c in pod.get("status", {}).get("conditions", []) if c["type"] == "PodScheduled" and c.get("message")),
        None,
    )
    return [*lines, condition["message"]] if condition else lines


@dataclass(frozen=True)
class Verdict:
    """A refusal class (`kind`), what happened in the user's words, and what to change."""

    kind: str
    reason: str
    change: str


@dataclass(frozen=True)
class Asks:
    """What a pod asks: per GPU resource the most one container asks, CPU (millicores) and memory (MiB) summed
    over its containers (requests, else limits), HAMi's GPU type annotations, the pool it selects."""

    gpu: Mapping[str, int]
    cpu_millis: int
    memory_mib: int
    use_types: tuple[str, ...]
    avoid_types: tuple[str, ...]
    pool: str | None


def asks_of(pod: Mapping[str, Any]) -> Asks:
    """From a pod or a pod template (metadata and spec)."""
    gpu: dict[str, int] = {}
    cpu, memory = Fraction(0), Fraction(0)
    for index, container in enumerate(containers(dict(pod))):
        resources = container.get("resources") or {}
        limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
        for resource in {*limits, *requests}:
            amount = quantity(limits.get(resource, requests.get(resource))) or Fraction(0)
            if str(resource).startswith("nvidia.com/"):
                gpu[str(resource)] = max(gpu.get(str(resource), 0), int(amount))
        if index < len((pod.get("spec") or {}).get("containers") or []):
            cpu += quantity(requests.get("cpu", limits.get("cpu", 0))) or 0
            memory += quantity(requests.get("memory", limits.get("memory", 0))) or 0
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    return Asks(
        gpu,
        int(cpu * 1000),
        int(memory / 2**20),
        _types(annotations.get(USE_GPU_TYPE)),
        _types(annotations.get(NOUSE_GPU_TYPE)),
        selector.get(names.POOL_LABEL),
    )


def _types(value: Any) -> tuple[str, ...]:
    return tuple(part.strip() for part in str(value or "").split(",") if part.strip())


def _holds_type(model: str, wanted: Iterable[str]) -> bool:
    return any(part.upper() in f"NVIDIA {model}".upper() for part in wanted)


def _pool_choices(team: TeamView, asks: Asks) -> list[PoolView]:
    """The team's pools that hold the pod: every GPU resource it asks registered there, within one container's
    bound."""
    return [
        pool
        for pool in team.pools
        if all(resource in pool.limits and amount <= pool.limits[resource] for resource, amount in asks.gpu.items())
    ]


def _describe(pool: PoolView) -> str:
    return f"{pool.name} ({'/'.join(pool.gpu_models)}, {pool.sharing})"


def refused(message: str, asks: Asks, team: TeamView) -> Verdict:
    """A pod the API server refused at admission: the team's policies or its ResourceQuota."""
    per_container = PER_CONTAINER.search(message)
    if per_container:
        resource, limit = per_container.group(1), int(per_container.group(2))
        asked = asks.gpu.get(resource, 0)
        if resource == names.GPU_MEMORY:
            holder = max(team.pools, key=lambda pool: pool.limits.get(resource, 0))
            return Verdict(
                "gpu-memory",
                f"asks {asked} {resource} (GPU memory) in one container; the largest GPU of the team's pools "
                f"({'/'.join(holder.gpu_models)}, pool {holder.name}) registers {limit}",
                f"ask at most {limit} {resource} per container (a vGPU lives on one GPU), or get a pool of larger "
                "GPUs for the team",
            )
        if resource == names.GPU:
            return Verdict(
                "vgpus",
                f"asks {asked} vGPUs in one container; HAMi gives each a GPU of its own and no node of the team's "
                f"pools has more than {limit} GPU{'s' if limit > 1 else ''}",
                f"ask at most {limit} {resource} per container, or get a pool of multi-GPU nodes for the team",
            )
        return Verdict(
            "per-gpu",
            f"asks {asked} {resource} in one container; one GPU of the team's pools holds {limit}",
            f"ask at most {limit} {resource} per container",
        )
    if "exceeding resource quota" in message:  # HAMi's webhook, charging what HAMi would hand out
        return Verdict(
            "quota",
            "the team's quota of GPU memory or cores, as HAMi's webhook charges it (a whole GPU's memory per vGPU "
            "that asks none), has no room for it",
            f"ask gpumem per vGPU, run fewer pods at once, or raise gpushare:teams[{team.name}].quota",
        )
    if "exceeded quota" in message:
        used = QUOTA_USE.search(message)
        detail = f" (asked {used.group(1)}, used {used.group(2)}, limit {used.group(3)})" if used else ""
        return Verdict(
            "quota",
            f"the team's quota is used up{detail}",
            f"run fewer or smaller pods at once, or raise gpushare:teams[{team.name}].quota",
        )
    if "must select its pool" in message:
        choices = _pool_choices(team, asks)
        picks = "; ".join(
            f"nodeSelector {names.POOL_LABEL}: {pool.name} runs it on {_describe(pool)}" for pool in choices
        )
        return Verdict(
            "no-pool",
            f"selects no pool, and {len(choices)} of the team's pools hold it" if len(choices) > 1 else
            "selects no pool, and no pool of the team holds it alone",
            picks or f"select one of the team's pools: {', '.join(p.name for p in team.pools)}",
        )  # fmt: skip
    if "may select only pools of team" in message:
        return Verdict(
            "other-pool",
            f"selects a pool team {team.name} does not list",
            f"select one of {', '.join(_describe(pool) for pool in team.pools)}",
        )
    if "priority must be at most" in message:
        return Verdict(
            "priority", "asks a priority above the team's tier", "drop priorityClassName, or use the team's tier's"
        )
    if "must tolerate" in message:
        key, value, effect = (names.GPU_TAINT[k] for k in ("key", "value", "effect"))
        return Verdict(
            "toleration",
            "does not tolerate the GPU pools' taint",
            f"add tolerations: [{{key: {key}, operator: Equal, value: '{value}', effect: {effect}}}]",
        )
    return Verdict("admission", "refused at admission", "see the message")


def pending(messages: Iterable[str], asks: Asks, team: TeamView) -> Verdict:
    """A pod admitted but not placed: judged from its pool and what HAMi, kube-scheduler and Karpenter said
    (newest last)."""
    said = list(messages)
    text = "\n".join(said)
    pool = team.pool(asks.pool) or (team.pools[0] if len(team.pools) == 1 else None)
    models = pool.gpu_models if pool else tuple(m for p in team.pools for m in p.gpu_models)
    where = f"pool {pool.name}" if pool else "the team's pools"
    if asks.use_types and not any(_holds_type(model, asks.use_types) for model in models):
        return Verdict(
            "gpu-type",
            f"asks a GPU of type {', '.join(asks.use_types)} ({USE_GPU_TYPE}); {where} has {', '.join(models)}",
            f"drop the {USE_GPU_TYPE} annotation or name one of {', '.join(models)}",
        )
    if asks.avoid_types and all(_holds_type(model, asks.avoid_types) for model in models):
        return Verdict(
            "gpu-type",
            f"avoids every GPU type of {where} ({NOUSE_GPU_TYPE}: {', '.join(asks.avoid_types)})",
            f"drop the {NOUSE_GPU_TYPE} annotation or select another pool",
        )
    if pool and (asks.cpu_millis > pool.largest_vcpu * 1000 or asks.memory_mib > pool.largest_memory_mib):
        return Verdict(
            "node-size",
            f"asks {asks.cpu_millis / 1000:g} vCPUs and {asks.memory_mib / 1024:g} GiB; the largest node of {where} "
            f"({pool.largest_type}) has {pool.largest_vcpu} vCPUs and {pool.largest_memory_mib / 1024:g} GiB",
            "ask at most that (less what the node's daemons take), or add a larger type to the pool's instanceTypes",
        )
    if "CardTypeMismatch" in text:
        return Verdict(
            "gpu-type",
            f"HAMi found no GPU of the type it asks on {where} (it has {', '.join(models)})",
            f"drop the {USE_GPU_TYPE} / {NOUSE_GPU_TYPE} annotations or select a pool with that GPU",
        )
    if "ResourceQuotaNotFit" in text:
        return Verdict(
            "quota",
            "the team's quota of GPU memory or cores, as HAMi charges it (a whole GPU's memory for a pod that "
            "asks none), is used up",
            f"run fewer or smaller pods at once (ask gpumem), or raise gpushare:teams[{team.name}].quota",
        )
    if "exceed limits for nodepool" in text:
        limit = f" ({pool.max_gpus} GPUs, maxGpus)" if pool else ""
        return Verdict(
            "pool-limit",
            f"{where} is at its limit{limit}: Karpenter may launch no further node for it",
            "wait for room on the pool, or raise its maxGpus",
        )
    if any(reason in text for reason in GPU_FULL):
        return Verdict(
            "gpu-full",
            f"no GPU of the nodes up had room left for it (HAMi: {_hami_reasons(text)})",
            "wait: Karpenter launches a node once it sees the room is missing",
        )
    if "untolerated taint" in text or "did not tolerate" in text:
        return Verdict("toleration", "tolerates no node's taint it could run on", "add the GPU pools' toleration")
    if "no instance type" in text:
        return Verdict(
            "node-size", f"no instance type of {where} holds what it asks (Karpenter)", "ask less, or add a type"
        )
    return Verdict("pending", f"not placed when the run settled: {said[-1] if said else 'no word from anyone'}", "")


def _hami_reasons(text: str) -> str:
    return ", ".join(reason for reason in GPU_FULL if reason in text)
