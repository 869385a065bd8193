"""The cheapest packing of a set of HAMi pods onto a pool's instance types that respects HAMi's per-GPU placement.

A bound for `make simulate`: what Karpenter plus HAMi could achieve at best on the same pools, with each vGPU on
one physical GPU (its memory and cores within that GPU's, at most `deviceSplitCount` vGPUs per GPU, a pod's
vGPUs on distinct GPUs of one node) and each pod's CPU and memory within the node's allocatable. Found by
first-fit decreasing per GPU, once per instance type to open nodes of, then each node shrunk to the cheapest
type that still holds what it got; the cheapest of those packings is the figure. It is a packing that exists,
so Karpenter's real cost can be compared with something achievable (the fractional bound is not).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class PodShape:
    """One pod: `vgpus` vGPUs of `gpu_memory_mib` and `gpu_cores` each, and its CPU and memory requests."""

    vgpus: int
    gpu_memory_mib: int
    gpu_cores: int
    cpu_millis: int
    memory_mib: int


@dataclass(frozen=True)
class NodeType:
    """What one node of an instance type offers pods: allocatable CPU, memory and pods, and its GPUs as HAMi
    registers them."""

    name: str
    usd_per_hour: float
    cpu_millis: int
    memory_mib: int
    pods: int
    gpus: int
    split: int
    gpu_memory_mib: int
    gpu_cores: int


@dataclass
class _Gpu:
    memory_mib: int
    cores: int
    slots: int


@dataclass
class _Node:
    kind: NodeType
    gpus: list[_Gpu]
    cpu_millis: int
    memory_mib: int
    pods: int
    held: list[PodShape] = field(default_factory=list)

    @classmethod
    def of(cls, kind: NodeType) -> _Node:
        gpus = [_Gpu(kind.gpu_memory_mib, kind.gpu_cores, kind.split) for _ in range(kind.gpus)]
        return cls(kind, gpus, kind.cpu_millis, kind.memory_mib, kind.pods)

    def place(self, pod: PodShape) -> bool:
        """Put the pod here if it fits (first GPUs that fit each vGPU); False leaves the node unchanged."""
        if pod.cpu_millis > self.cpu_millis or pod.memory_mib > self.memory_mib or self.pods < 1:
            return False
        fitting = [
            gpu
            for gpu in self.gpus
            if gpu.memory_mib >= pod.gpu_memory_mib and gpu.cores >= pod.gpu_cores and gpu.slots >= 1
        ][: pod.vgpus]
        if len(fitting) < pod.vgpus:
            return False
        for gpu in fitting:
            gpu.memory_mib -= pod.gpu_memory_mib
            gpu.cores -= pod.gpu_cores
            gpu.slots -= 1
        self.cpu_millis -= pod.cpu_millis
        self.memory_mib -= pod.memory_mib
        self.pods -= 1
        self.held.append(pod)
        return True


def _decreasing(pods: Sequence[PodShape]) -> list[PodShape]:
    return sorted(pods, key=lambda p: (p.vgpus * p.gpu_memory_mib, p.vgpus * p.gpu_cores, p.cpu_millis), reverse=True)


def _first_fit(pods: Sequence[PodShape], opened: NodeType, kinds: Sequence[NodeType]) -> list[_Node] | None:
    """First-fit decreasing, opening nodes of `opened` (or, for a pod no such node holds, of the cheapest type
    that does); None when some pod fits no type."""
    nodes: list[_Node] = []
    for pod in _decreasing(pods):
        if any(node.place(pod) for node in nodes):
            continue
        for kind in [opened, *sorted(kinds, key=lambda k: k.usd_per_hour)]:
            node = _Node.of(kind)
            if node.place(pod):
                nodes.append(node)
                break
        else:
            return None
    return nodes


def _cheapest_holding(pods: Sequence[PodShape], kinds: Sequence[NodeType]) -> NodeType | None:
    """The cheapest type one node of which holds all these pods."""
    holding = [kind for kind in kinds if len(_first_fit(pods, kind, [kind]) or ()) == 1]
    return min(holding, key=lambda kind: kind.usd_per_hour, default=None)


def first_fit_packing(
    pods: Sequence[PodShape], kinds: Sequence[NodeType]
) -> list[tuple[NodeType, list[PodShape]]] | None:
    """The cheapest first-fit packing found: (type, pods held) per node; None when some pod fits no type."""
    best: tuple[float, list[tuple[NodeType, list[PodShape]]]] | None = None
    for opened in kinds:
        nodes = _first_fit(pods, opened, kinds)
        if nodes is None:
            continue
        shrunk = [(_cheapest_holding(node.held, kinds) or node.kind, node.held) for node in nodes]
        usd = round(sum(kind.usd_per_hour for kind, _ in shrunk), 3)
        if best is None or usd < best[0]:
            best = (usd, shrunk)
    return None if best is None else best[1]


def best_packing(pods: Sequence[PodShape], kinds: Sequence[NodeType]) -> tuple[float, dict[str, int]] | None:
    """Dollars per hour and nodes by type of the cheapest first-fit packing found; None when some pod fits no type."""
    nodes = first_fit_packing(pods, kinds)
    if nodes is None:
        return None
    usd = round(sum(kind.usd_per_hour for kind, _ in nodes), 3)
    return usd, dict(sorted(Counter(kind.name for kind, _ in nodes).items()))
