"""An independent check of a packing against HAMi's placement rules, written apart from the solver's model so that
a mistake in one is caught by the other: `make pack` refuses to print a packing this finds a problem in, and the
tests run it on every packing the solver returns.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from e2e.simulator.exact import Packing
from e2e.simulator.packing import PodShape


def placement_problems(
    packing: Packing, pods: Sequence[PodShape], limit: tuple[int, dict[str, int]] | None = None
) -> list[str]:
    """Every way the packing breaks a rule, one line each; empty when it is a valid placement of exactly `pods`."""
    problems = []
    placed: Counter[PodShape] = Counter()
    for number, node in enumerate(packing.nodes):
        kind = node.kind
        where = f"node {number} ({kind.name})"
        memory = [0] * kind.gpus
        cores = [0] * kind.gpus
        vgpus = [0] * kind.gpus
        for entry in node.pods:
            pod = entry.pod
            placed[pod] += 1
            if len(entry.gpus) != pod.vgpus:
                problems.append(f"{where}: a pod of {pod.vgpus} vGPUs got {len(entry.gpus)} GPUs")
            if len(set(entry.gpus)) != len(entry.gpus):
                problems.append(f"{where}: a pod has two vGPUs on one GPU {entry.gpus}")
            for gpu in set(entry.gpus):
                if not 0 <= gpu < kind.gpus:
                    problems.append(f"{where}: GPU {gpu} does not exist")
                    continue
                memory[gpu] += pod.gpu_memory_mib
                cores[gpu] += pod.gpu_cores
                vgpus[gpu] += 1
        for gpu in range(kind.gpus):
            if memory[gpu] > kind.gpu_memory_mib:
                problems.append(f"{where}: GPU {gpu} holds {memory[gpu]} MiB of {kind.gpu_memory_mib}")
            if cores[gpu] > kind.gpu_cores:
                problems.append(f"{where}: GPU {gpu} holds {cores[gpu]} cores of {kind.gpu_cores}")
            if vgpus[gpu] > kind.split:
                problems.append(f"{where}: GPU {gpu} holds {vgpus[gpu]} vGPUs of {kind.split}")
        cpu = sum(entry.pod.cpu_millis for entry in node.pods)
        ram = sum(entry.pod.memory_mib for entry in node.pods)
        if cpu > kind.cpu_millis:
            problems.append(f"{where}: {cpu}m CPU asked of {kind.cpu_millis}m allocatable")
        if ram > kind.memory_mib:
            problems.append(f"{where}: {ram} MiB memory asked of {kind.memory_mib} MiB allocatable")
        if len(node.pods) > kind.pods:
            problems.append(f"{where}: {len(node.pods)} pods of {kind.pods} allowed")
    if placed != Counter(pods):
        problems.append(f"the packing places {sum(placed.values())} pods, not the {len(pods)} asked (or other ones)")
    if limit is not None:
        used = sum(limit[1].get(node.kind.name, 0) for node in packing.nodes)
        if used > limit[0]:
            problems.append(f"the nodes count {used} against the pool's limit of {limit[0]}")
    usd = sum(node.kind.usd_per_hour for node in packing.nodes)
    if abs(usd - packing.usd_per_hour) > 1e-6:
        problems.append(f"the nodes cost ${usd:.6f}/h, the packing says ${packing.usd_per_hour}/h")
    if packing.lower_bound_usd > packing.usd_per_hour + 1e-6:
        problems.append(f"the lower bound ${packing.lower_bound_usd}/h is above the cost ${packing.usd_per_hour}/h")
    return problems
