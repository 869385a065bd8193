"""The cheapest packing of a pool's pods onto its instance types, proven by OR-Tools CP-SAT.

The model keeps HAMi's per-GPU rules (`packing`'s): each vGPU on one physical GPU, its memory and cores within that
GPU's, at most `split` vGPUs per GPU, a pod's vGPUs on distinct GPUs of one node; each node's allocatable CPU,
memory and pods; and the pool's NodePool limit, which counts a node's whole registered capacity. Exclusive and
time-sliced pools come in as node types whose GPUs hold `split` pods each and no memory or cores to share.

Two models, both exact. The content model (`exact_packing`'s first choice) lists every maximal content one node of
each type can hold and counts the nodes opened of each: identical pods and identical nodes are counts, no symmetry
is left. The node model (when there are too many contents to list) keeps one count per pod shape per candidate node
and per GPU, with the candidate nodes of one type ordered (opened first, then by load), as are the GPUs within a
node: the solver never explores a permutation of a packing it has seen. A pod-to-GPU assignment is read back from
the per-GPU vGPU counts: with at most one vGPU of a pod per GPU, counts no larger than the pods of that shape always
split into pods on distinct GPUs.

The solve is deterministic (one worker, a fixed seed, limits in the solver's deterministic time): the same pods
give the same packing on any machine, unless the wall-clock safety stop cuts a solve short. When a limit stops the
proof, the best packing found is returned with the proven lower bound; the first-fit packing
(`packing.first_fit_packing`) is the solver's starting hint, and is returned, labelled as such, only when the solver
found nothing cheaper.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations, pairwise

from ortools.sat.python import cp_model

from e2e.simulator.packing import NodeType, PodShape, first_fit_packing

# Work units of CP-SAT's deterministic clock, the same on every machine (one unit took 5 to 9 s of wall time on a
# loaded two-core machine); a fifth goes to branch and bound, the rest to the core-based search that proves.
DETERMINISTIC_LIMIT = 1.5
SEARCH_SHARE = 0.2
# A safety stop in wall time only: a solve it cuts short may differ between runs (docs/packing.md).
WALL_LIMIT_S = 30.0
SEED = 7
MICRO_USD = 1_000_000

# A pool's NodePool limit, and what one node of each type counts against it.
Limit = tuple[int, dict[str, int]]
FirstFit = Sequence[tuple[NodeType, Sequence[PodShape]]]

OPTIMAL, FEASIBLE, FIRST_FIT, INFEASIBLE, UNKNOWN = "optimal", "feasible", "first-fit", "infeasible", "unknown"


@dataclass(frozen=True)
class PlacedPod:
    """One pod on a node, and the indices of the node's GPUs its vGPUs got."""

    pod: PodShape
    gpus: tuple[int, ...]


@dataclass(frozen=True)
class PackedNode:
    kind: NodeType
    pods: tuple[PlacedPod, ...]


@dataclass(frozen=True)
class Packing:
    """A packing and what the solver proved about it: `lower_bound_usd` no packing within the limit beats; `status`
    is `optimal` (proven), `feasible` (the limit stopped the proof), `first-fit` (the solver found nothing cheaper
    than its hint within the limit), `infeasible` (no packing: a pod fits no type, or not within the limit) or
    `unknown` (the limit stopped the solver before it found a packing or proved there is none)."""

    status: str
    nodes: tuple[PackedNode, ...]
    usd_per_hour: float
    lower_bound_usd: float

    @property
    def gap(self) -> float:
        """How far above the proven bound the packing may be, as a share of its cost (0 when proven optimal)."""
        if not self.nodes:
            return 0.0
        return max(0.0, (self.usd_per_hour - self.lower_bound_usd) / self.usd_per_hour)

    def nodes_by_type(self) -> dict[str, int]:
        return dict(sorted(Counter(node.kind.name for node in self.nodes).items()))


def _micro(usd: float) -> int:
    return round(usd * MICRO_USD)


def _fits_one(pod: PodShape, kind: NodeType) -> bool:
    """Whether a node of this type, empty, holds the pod."""
    return (
        pod.vgpus <= kind.gpus
        and pod.gpu_memory_mib <= kind.gpu_memory_mib
        and pod.gpu_cores <= kind.gpu_cores
        and kind.split >= 1
        and pod.cpu_millis <= kind.cpu_millis
        and pod.memory_mib <= kind.memory_mib
        and kind.pods >= 1
    )


def _per_node(pod: PodShape, kind: NodeType) -> int:
    """The most pods of this shape alone one node holds (bounds the count variables)."""
    if not _fits_one(pod, kind):
        return 0
    per_gpu = kind.split
    if pod.gpu_memory_mib:
        per_gpu = min(per_gpu, kind.gpu_memory_mib // pod.gpu_memory_mib)
    if pod.gpu_cores:
        per_gpu = min(per_gpu, kind.gpu_cores // pod.gpu_cores)
    bounds = [kind.gpus * per_gpu // pod.vgpus, kind.pods]
    if pod.cpu_millis:
        bounds.append(kind.cpu_millis // pod.cpu_millis)
    if pod.memory_mib:
        bounds.append(kind.memory_mib // pod.memory_mib)
    return min(bounds)


def _nodes_of_type(kind: NodeType, counts: Counter[PodShape], limit: Limit | None, ceiling_usd: float | None) -> int:
    """How many candidate nodes of one type the model needs: never more than the pods it can hold (an optimum has
    no empty node), than the limit admits, or than the first-fit cost pays for (when first-fit is within the limit,
    an optimum costs no more)."""
    most = sum(count for pod, count in counts.items() if _per_node(pod, kind) > 0)
    if limit is not None and limit[1].get(kind.name, 0) > 0:
        most = min(most, limit[0] // limit[1][kind.name])
    if ceiling_usd is not None and kind.usd_per_hour > 0:
        most = min(most, math.floor(ceiling_usd / kind.usd_per_hour + 1e-9))
    return most


def resource_bound(pods: Sequence[PodShape], kinds: Sequence[NodeType]) -> float:
    """A bound no packing beats: for each resource, all the pods ask of it at the lowest price per unit any type
    offers it (the node model's floor, whose own relaxation the time limit may stop before it is solved)."""
    asks = [
        (sum(p.vgpus * p.gpu_memory_mib for p in pods), lambda k: k.gpus * k.gpu_memory_mib),
        (sum(p.vgpus * p.gpu_cores for p in pods), lambda k: k.gpus * k.gpu_cores),
        (sum(p.vgpus for p in pods), lambda k: k.gpus * k.split),
        (sum(p.cpu_millis for p in pods), lambda k: k.cpu_millis),
        (sum(p.memory_mib for p in pods), lambda k: k.memory_mib),
        (len(pods), lambda k: k.pods),
    ]
    bound = 0.0
    for asked, offered in asks:
        prices = [k.usd_per_hour / offered(k) for k in kinds if offered(k) > 0]
        if asked and prices:
            bound = max(bound, asked * min(prices))
    return bound


def _within_limit(nodes: Sequence[tuple[NodeType, Sequence[PodShape]]], limit: Limit | None) -> bool:
    return limit is None or sum(limit[1].get(kind.name, 0) for kind, _ in nodes) <= limit[0]


def _node_model(
    pods: Sequence[PodShape],
    kinds: Sequence[NodeType],
    limit: Limit | None = None,
    deterministic_limit: float = DETERMINISTIC_LIMIT,
) -> Packing:
    """The model with a node per candidate node of each type (used when a pool's nodes hold too many different
    mixes of pods to list them)."""
    counts = Counter(pods)
    shapes = sorted(counts, key=lambda p: (-p.vgpus * p.gpu_memory_mib, -p.gpu_cores, -p.cpu_millis, repr(p)))
    kinds = sorted(kinds, key=lambda k: (k.usd_per_hour, k.name))
    first_fit = first_fit_packing(pods, kinds)
    hint = first_fit if first_fit is not None and _within_limit(first_fit, limit) else None
    ceiling = sum(kind.usd_per_hour for kind, _ in hint) if hint is not None else None
    if any(not any(_fits_one(shape, kind) for kind in kinds) for shape in shapes):
        return Packing(INFEASIBLE, (), 0.0, 0.0)

    model = cp_model.CpModel()
    opened: dict[tuple[int, int], cp_model.IntVar] = {}
    held: dict[tuple[int, int, int], cp_model.IntVar] = {}  # (type, node, shape) -> pods of that shape
    on_gpu: dict[tuple[int, int, int, int], cp_model.IntVar] = {}  # (type, node, shape, gpu) -> its vGPUs there
    slots = {t: _nodes_of_type(kind, counts, limit, ceiling) for t, kind in enumerate(kinds)}
    for t, kind in enumerate(kinds):
        weights = [shape.vgpus * max(shape.gpu_memory_mib, 1) + shape.cpu_millis for shape in shapes]
        for n in range(slots[t]):
            node_open = opened[t, n] = model.new_bool_var(f"open_{t}_{n}")
            pods_here = []
            for s, shape in enumerate(shapes):
                most = min(_per_node(shape, kind), counts[shape])
                count = held[t, n, s] = model.new_int_var(0, most, f"held_{t}_{n}_{s}")
                model.add(count <= most * node_open)
                pods_here.append(count)
                if most == 0:
                    continue
                for g in range(kind.gpus):
                    on_gpu[t, n, s, g] = model.new_int_var(0, min(most, kind.split), f"gpu_{t}_{n}_{s}_{g}")
                    model.add(on_gpu[t, n, s, g] <= count)  # one vGPU of a pod per GPU
                model.add(sum(on_gpu[t, n, s, g] for g in range(kind.gpus)) == shape.vgpus * count)
            model.add(sum(s.cpu_millis * c for s, c in zip(shapes, pods_here, strict=True)) <= kind.cpu_millis)
            model.add(sum(s.memory_mib * c for s, c in zip(shapes, pods_here, strict=True)) <= kind.memory_mib)
            model.add(sum(pods_here) <= kind.pods)
            gpu_loads = []
            for g in range(kind.gpus):
                here = [(shapes[s], on_gpu[t, n, s, g]) for s in range(len(shapes)) if (t, n, s, g) in on_gpu]
                model.add(sum(v for _, v in here) <= kind.split)
                model.add(sum(p.gpu_memory_mib * v for p, v in here) <= kind.gpu_memory_mib)
                model.add(sum(p.gpu_cores * v for p, v in here) <= kind.gpu_cores)
                gpu_loads.append(sum((p.gpu_memory_mib + p.gpu_cores + 1) * v for p, v in here))
            for heavier, lighter in pairwise(gpu_loads):  # the node's GPUs are alike
                model.add(heavier >= lighter)
            if n > 0:  # nodes of one type are alike: opened first, then by load
                model.add(opened[t, n - 1] >= node_open)
                model.add(
                    sum(w * held[t, n - 1, s] for s, w in enumerate(weights))
                    >= sum(w * held[t, n, s] for s, w in enumerate(weights))
                )
    for s, shape in enumerate(shapes):
        model.add(sum(held[t, n, s] for t in range(len(kinds)) for n in range(slots[t])) == counts[shape])
    if limit is not None:
        model.add(sum(limit[1].get(kinds[t].name, 0) * opened[t, n] for t, n in opened) <= limit[0])
    model.minimize(sum(_micro(kinds[t].usd_per_hour) * var for (t, _), var in opened.items()))
    if hint is not None:
        _add_hint(model, hint, kinds, shapes, slots, opened, held)

    solver = _solver(deterministic_limit)
    status = solver.solve(model)
    floor = resource_bound(pods, kinds)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        if status == cp_model.INFEASIBLE:
            return Packing(INFEASIBLE, (), 0.0, 0.0)
        bound = max(floor, solver.best_objective_bound / MICRO_USD)
        if hint is None:
            return Packing(UNKNOWN, (), 0.0, bound)
        return _from_first_fit(hint, bound)
    bound = max(floor, solver.best_objective_bound / MICRO_USD)
    usd = round(solver.objective_value / MICRO_USD, 6)
    if hint is not None and usd >= ceiling - 1e-9 and status != cp_model.OPTIMAL:
        return _from_first_fit(hint, bound)
    nodes = []
    for t, kind in enumerate(kinds):
        for n in range(slots[t]):
            if not solver.value(opened[t, n]):
                continue
            placed: list[PlacedPod] = []
            for s, shape in enumerate(shapes):
                count = solver.value(held[t, n, s])
                per_gpu = [solver.value(on_gpu[t, n, s, g]) if (t, n, s, g) in on_gpu else 0 for g in range(kind.gpus)]
                placed += _split_into_pods(shape, count, per_gpu)
            nodes.append(PackedNode(kind, tuple(placed)))
    return Packing(OPTIMAL if status == cp_model.OPTIMAL else FEASIBLE, tuple(nodes), usd, min(bound, usd))


def _add_hint(
    model: cp_model.CpModel,
    hint: FirstFit,
    kinds: Sequence[NodeType],
    shapes: Sequence[PodShape],
    slots: dict[int, int],
    opened: dict[tuple[int, int], cp_model.IntVar],
    held: dict[tuple[int, int, int], cp_model.IntVar],
) -> None:
    """Start the search from the first-fit packing, its nodes of each type in the model's order (by load)."""
    index = {shape: s for s, shape in enumerate(shapes)}
    weights = [shape.vgpus * max(shape.gpu_memory_mib, 1) + shape.cpu_millis for shape in shapes]
    for t, kind in enumerate(kinds):
        loads = [Counter(index[p] for p in pods) for k, pods in hint if k == kind]
        loads.sort(key=lambda c: -sum(weights[s] * n for s, n in c.items()))
        for n in range(slots[t]):
            here = loads[n] if n < len(loads) else Counter()
            model.add_hint(opened[t, n], n < len(loads))
            for s in range(len(shapes)):
                model.add_hint(held[t, n, s], here[s])


def _from_first_fit(hint: FirstFit, bound: float) -> Packing:
    nodes = tuple(PackedNode(kind, tuple(_first_fit_gpus(kind, pods))) for kind, pods in hint)
    usd = round(sum(kind.usd_per_hour for kind, _ in hint), 6)
    return Packing(FIRST_FIT, nodes, usd, min(bound, usd))


def _first_fit_gpus(kind: NodeType, pods: Sequence[PodShape]) -> list[PlacedPod]:
    """The GPUs first-fit gave each pod (packing._Node.place's rule, replayed to name them)."""
    memory, cores, slots = [kind.gpu_memory_mib] * kind.gpus, [kind.gpu_cores] * kind.gpus, [kind.split] * kind.gpus
    placed = []
    for pod in pods:
        fitting = [
            g
            for g in range(kind.gpus)
            if memory[g] >= pod.gpu_memory_mib and cores[g] >= pod.gpu_cores and slots[g] >= 1
        ][: pod.vgpus]
        for g in fitting:
            memory[g] -= pod.gpu_memory_mib
            cores[g] -= pod.gpu_cores
            slots[g] -= 1
        placed.append(PlacedPod(pod, tuple(fitting)))
    return placed


def _split_into_pods(shape: PodShape, count: int, per_gpu: Sequence[int]) -> list[PlacedPod]:
    """`count` pods from per-GPU vGPU counts (each at most `count`, summing to vgpus x count): the GPUs listed in
    order, each as often as its count, and pod i takes places i, i + count, ...: a GPU's run is at most `count`
    long, so no pod gets one GPU twice."""
    if count == 0:
        return []
    listed = [g for g, times in enumerate(per_gpu) for _ in range(times)]
    return [PlacedPod(shape, tuple(sorted(listed[i::count]))) for i in range(count)]


# Beyond this many distinct node contents over a pool's types, or a content whose GPUs take more than PLACE_STEPS
# steps to decide, the node model solves instead of the pattern model.
PATTERN_CAP = 40_000
PLACE_STEPS = 20_000


def exact_packing(
    pods: Sequence[PodShape],
    kinds: Sequence[NodeType],
    limit: Limit | None = None,
    deterministic_limit: float = DETERMINISTIC_LIMIT,
) -> Packing:
    """The cheapest packing of `pods` onto nodes of `kinds`; `limit` is the pool's NodePool limit and what one node
    of each type counts against it (None: unlimited).

    Every content a node of each type can hold (how many pods of each shape; HAMi's rules checked per GPU) is
    listed, and the solver picks how many nodes of each content to open: identical nodes and identical pods are
    counts, so no symmetry is left to explore. When a pool's nodes hold too many contents to list, one variable per
    pod shape per candidate node solves instead (ordered, as the module says)."""
    if not pods:
        return Packing(OPTIMAL, (), 0.0, 0.0)
    counts = Counter(pods)
    shapes = sorted(counts, key=lambda p: (-p.vgpus * p.gpu_memory_mib, -p.gpu_cores, -p.cpu_millis, repr(p)))
    kinds = sorted(kinds, key=lambda k: (k.usd_per_hour, k.name))
    if any(not any(_fits_one(shape, kind) for kind in kinds) for shape in shapes):
        return Packing(INFEASIBLE, (), 0.0, 0.0)
    try:
        contents = _contents(shapes, counts, kinds)
    except TooHard:
        contents = None
    if contents is None:
        return _node_model(pods, kinds, limit, deterministic_limit)
    first_fit = first_fit_packing(pods, kinds)
    hint = first_fit if first_fit is not None and _within_limit(first_fit, limit) else None
    model = cp_model.CpModel()
    chosen = []
    for number, (kind, content) in enumerate(contents):
        most = max(math.ceil(counts[shape] / held) for shape, held in zip(shapes, content, strict=True) if held)
        if limit is not None and limit[1].get(kind.name, 0) > 0:
            most = min(most, limit[0] // limit[1][kind.name])
        chosen.append(model.new_int_var(0, most, f"nodes_{number}"))
    for s, shape in enumerate(shapes):
        model.add(sum(content[s] * var for (_, content), var in zip(contents, chosen, strict=True)) >= counts[shape])
    if limit is not None:
        units = [limit[1].get(kind.name, 0) for kind, _ in contents]
        model.add(sum(unit * var for unit, var in zip(units, chosen, strict=True)) <= limit[0])
    model.minimize(sum(_micro(kind.usd_per_hour) * var for (kind, _), var in zip(contents, chosen, strict=True)))
    if hint is not None:
        _hint_contents(model, hint, shapes, contents, chosen)
    fewest = _fewest_nodes(model, chosen, deterministic_limit * SEARCH_SHARE)
    model.add(sum(chosen) >= fewest)
    status, values, bound = _solve(model, chosen, deterministic_limit)
    if status == INFEASIBLE:
        return Packing(INFEASIBLE, (), 0.0, 0.0)
    if values is None:
        return _from_first_fit(hint, bound) if hint is not None else Packing(UNKNOWN, (), 0.0, bound)
    wanted = Counter(counts)
    nodes = []
    for (kind, content), opened in zip(contents, values, strict=True):
        for _ in range(opened):
            placed = []
            pods_here = [shape for shape, held in zip(shapes, content, strict=True) for _ in range(held)]
            for entry in _place(kind, pods_here) or ():
                if wanted[entry.pod] > 0:  # the cover may hold more pods than asked: leave the surplus out
                    wanted[entry.pod] -= 1
                    placed.append(entry)
            if placed:
                nodes.append(PackedNode(kind, tuple(placed)))
    usd = round(sum(node.kind.usd_per_hour for node in nodes), 6)
    if hint is not None and status != OPTIMAL and usd >= sum(k.usd_per_hour for k, _ in hint) - 1e-9:
        return _from_first_fit(hint, bound)
    return Packing(OPTIMAL if usd <= bound + 1e-9 else FEASIBLE, tuple(nodes), usd, min(bound, usd))


def _solver(deterministic_limit: float, core: bool = False) -> cp_model.CpSolver:
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = SEED
    solver.parameters.max_deterministic_time = deterministic_limit
    solver.parameters.max_time_in_seconds = WALL_LIMIT_S
    solver.parameters.optimize_with_core = core
    return solver


def _solve(
    model: cp_model.CpModel, chosen: Sequence[cp_model.IntVar], deterministic_limit: float
) -> tuple[str, list[int] | None, float]:
    """Status, the variables' values of the best packing (None: none found) and the proven bound in $/h. Two
    single-worker passes: branch and bound finds good packings fast but seldom raises the relaxation's bound; a
    core-based search, from scratch (a hint slows it), raises the bound by proving cores of the objective
    infeasible: together they prove in seconds what either alone leaves open."""
    search = _solver(deterministic_limit * SEARCH_SHARE)
    status = search.solve(model)
    if status == cp_model.INFEASIBLE:
        return INFEASIBLE, None, 0.0
    found = status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    values = [search.value(var) for var in chosen] if found else None
    objective = search.objective_value if found else math.inf
    bound = search.best_objective_bound
    if status != cp_model.OPTIMAL:
        proving = model.clone()
        proving.clear_hints()
        core = _solver(deterministic_limit * (1 - SEARCH_SHARE), core=True)
        status = core.solve(proving)
        if status == cp_model.INFEASIBLE:
            return INFEASIBLE, None, 0.0
        bound = max(bound, core.best_objective_bound)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) and core.objective_value < objective:
            values, objective = [core.value(var) for var in chosen], core.objective_value
    bound_usd = bound / MICRO_USD
    if values is None:
        return UNKNOWN, None, bound_usd
    return (OPTIMAL if objective <= bound else FEASIBLE), values, bound_usd


def _hint_contents(
    model: cp_model.CpModel,
    hint: FirstFit,
    shapes: Sequence[PodShape],
    contents: Sequence[tuple[NodeType, tuple[int, ...]]],
    chosen: Sequence[cp_model.IntVar],
) -> None:
    """Start from the first-fit packing: each of its nodes counted under the listed content it is part of (the
    first that holds it, of its type)."""
    index = {shape: s for s, shape in enumerate(shapes)}
    uses: Counter[int] = Counter()
    for kind, pods in hint:
        held = Counter(index[pod] for pod in pods)
        for number, (listed_kind, content) in enumerate(contents):
            if listed_kind == kind and all(content[s] >= n for s, n in held.items()):
                uses[number] += 1
                break
    for number, var in enumerate(chosen):
        model.add_hint(var, uses[number])


def _contents(
    shapes: Sequence[PodShape], counts: Counter[PodShape], kinds: Sequence[NodeType]
) -> list[tuple[NodeType, tuple[int, ...]]] | None:
    """Per type, every maximal content of one node (pods per shape, none above what is asked); None past the cap.
    The contents a node holds are closed under taking pods away, so a walk adding one pod at a time finds them all,
    and an optimum needs only maximal ones (a cover that holds more than asked leaves the surplus out)."""
    found: list[tuple[NodeType, tuple[int, ...]]] = []
    listed = 0
    for kind in kinds:
        feasible: set[tuple[int, ...]] = set()
        stack = [(0, (0,) * len(shapes))]
        while stack:
            start, content = stack.pop()
            feasible.add(content)
            listed += 1
            if listed > PATTERN_CAP:
                return None
            for s in range(start, len(shapes)):
                grown = (*content[:s], content[s] + 1, *content[s + 1 :])
                if grown[s] <= counts[shapes[s]] and _holds(kind, shapes, grown):
                    stack.append((s, grown))
        for content in sorted(feasible, reverse=True):
            if any(content) and not any(
                (*content[:s], content[s] + 1, *content[s + 1 :]) in feasible
                for s in range(len(shapes))
                if content[s] < counts[shapes[s]]
            ):
                found.append((kind, content))
    return found


def _holds(kind: NodeType, shapes: Sequence[PodShape], content: Sequence[int]) -> bool:
    """Whether one node of the type holds these pods (allocatable CPU, memory, pods, and HAMi's per-GPU rules)."""
    pods = [shape for shape, held in zip(shapes, content, strict=True) for _ in range(held)]
    if (
        len(pods) > kind.pods
        or sum(p.cpu_millis for p in pods) > kind.cpu_millis
        or sum(p.memory_mib for p in pods) > kind.memory_mib
    ):
        return False
    return _place(kind, pods) is not None if pods else True


class TooHard(Exception):
    """Deciding whether one node holds a content took more than PLACE_STEPS steps of the search."""


def _place(kind: NodeType, pods: Sequence[PodShape]) -> list[PlacedPod] | None:
    """GPUs for each pod's vGPUs on one node, or None when HAMi's rules leave no way (a search over GPU choices,
    states reached twice tried once; TooHard past PLACE_STEPS, single-GPU nodes never)."""
    if any(pod.vgpus > kind.gpus for pod in pods):
        return None
    if all(pod.gpu_memory_mib == 0 and pod.gpu_cores == 0 for pod in pods):
        # Only slots count: dealing the vGPUs out round-robin gives a pod distinct GPUs and evens the slots out.
        if sum(pod.vgpus for pod in pods) > kind.gpus * kind.split:
            return None
        placed, turn = [], 0
        for pod in pods:
            placed.append(PlacedPod(pod, tuple(sorted((turn + i) % kind.gpus for i in range(pod.vgpus)))))
            turn = (turn + pod.vgpus) % kind.gpus
        return placed
    if (
        sum(pod.vgpus * pod.gpu_memory_mib for pod in pods) > kind.gpus * kind.gpu_memory_mib
        or sum(pod.vgpus * pod.gpu_cores for pod in pods) > kind.gpus * kind.gpu_cores
        or sum(pod.vgpus for pod in pods) > kind.gpus * kind.split
    ):
        return None
    left = [(kind.gpu_memory_mib, kind.gpu_cores, kind.split)] * kind.gpus
    steps = [0]
    ordered = sorted(range(len(pods)), key=lambda i: (-pods[i].vgpus, -pods[i].gpu_memory_mib, -pods[i].gpu_cores))
    chosen: dict[int, tuple[int, ...]] = {}

    def search(position: int) -> bool:
        if position == len(ordered):
            return True
        pod = pods[ordered[position]]
        steps[0] += 1
        if steps[0] > PLACE_STEPS:
            raise TooHard
        tried = set()
        for gpus in combinations(range(kind.gpus), pod.vgpus):
            if not all(
                left[g][0] >= pod.gpu_memory_mib and left[g][1] >= pod.gpu_cores and left[g][2] >= 1 for g in gpus
            ):
                continue
            after = list(left)
            for g in gpus:
                memory, cores, slots = after[g]
                after[g] = (memory - pod.gpu_memory_mib, cores - pod.gpu_cores, slots - 1)
            state = tuple(sorted(after))  # the node's GPUs are alike: one state reached two ways is tried once
            if state in tried:
                continue
            tried.add(state)
            before = left[:]
            left[:] = after
            chosen[ordered[position]] = gpus
            if search(position + 1):
                return True
            left[:] = before
        return False

    if not search(0):
        return None
    return [PlacedPod(pod, chosen[i]) for i, pod in enumerate(pods)]


def _fewest_nodes(model: cp_model.CpModel, chosen: Sequence[cp_model.IntVar], deterministic_limit: float) -> int:
    """A proven lower bound on the nodes any packing opens: the same model minimizing their number. Its objective has
    unit coefficients, so the solver rounds the relaxation's bound up to a whole node, which the cost objective's
    prices hide from it; added back as a constraint, it lifts the cost bound to that many nodes."""
    counting = model.clone()
    counting.clear_objective()
    counting.minimize(sum(counting.get_int_var_from_proto_index(var.index) for var in chosen))
    solver = _solver(deterministic_limit)
    solver.solve(counting)
    return math.ceil(solver.best_objective_bound - 1e-6)
