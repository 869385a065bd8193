"""The exact packing: the optimum brute force finds on small mixes, never above first-fit, and every packing it
returns valid under HAMi's rules as an independent validator checks them."""

from __future__ import annotations

from itertools import combinations, product

from hypothesis import given, settings
from hypothesis import strategies as st

from e2e.simulator import exact
from e2e.simulator.exact import FEASIBLE, INFEASIBLE, OPTIMAL, PackedNode, Packing, PlacedPod, exact_packing
from e2e.simulator.hami_rules import placement_problems
from e2e.simulator.packing import NodeType, PodShape, best_packing


def _kind(name: str, usd: float, gpus: int = 1, cpu_millis: int = 3900, gpu_memory_mib: int = 23028) -> NodeType:
    return NodeType(name, usd, cpu_millis, 16000, 110, gpus, 10, gpu_memory_mib, 100)


def _partitions(items: list[int]) -> list[list[list[int]]]:
    if not items:
        return [[]]
    first, rest = items[0], items[1:]
    found = []
    for partition in _partitions(rest):
        found.append([[first], *partition])
        for i in range(len(partition)):
            found.append([*partition[:i], [first, *partition[i]], *partition[i + 1 :]])
    return found


def _one_node_holds(kind: NodeType, pods: list[PodShape]) -> bool:
    """Every way of giving each pod's vGPUs distinct GPUs, tried."""
    if sum(p.cpu_millis for p in pods) > kind.cpu_millis or sum(p.memory_mib for p in pods) > kind.memory_mib:
        return False
    if len(pods) > kind.pods:
        return False
    for choice in product(*(list(combinations(range(kind.gpus), p.vgpus)) for p in pods)):
        memory, cores, vgpus = [0] * kind.gpus, [0] * kind.gpus, [0] * kind.gpus
        for pod, gpus in zip(pods, choice, strict=True):
            for g in gpus:
                memory[g] += pod.gpu_memory_mib
                cores[g] += pod.gpu_cores
                vgpus[g] += 1
        if all(
            memory[g] <= kind.gpu_memory_mib and cores[g] <= kind.gpu_cores and vgpus[g] <= kind.split
            for g in range(kind.gpus)
        ):
            return True
    return False


def _brute_force(pods: list[PodShape], kinds: list[NodeType]) -> float | None:
    best = None
    for partition in _partitions(list(range(len(pods)))):
        usd = 0.0
        for group in partition:
            prices = [k.usd_per_hour for k in kinds if _one_node_holds(k, [pods[i] for i in group])]
            if not prices:
                break
            usd += min(prices)
        else:
            best = usd if best is None else min(best, usd)
    return best


_pod = st.builds(
    PodShape,
    vgpus=st.integers(1, 2),
    gpu_memory_mib=st.sampled_from([2048, 6144, 12288, 20480]),
    gpu_cores=st.sampled_from([10, 30, 60]),
    cpu_millis=st.sampled_from([500, 1500, 3000]),
    memory_mib=st.sampled_from([1024, 4096]),
)
_kinds = st.lists(
    st.builds(
        _kind,
        name=st.sampled_from(["a", "b", "c"]),
        usd=st.sampled_from([1.0, 1.3, 1.9, 2.6]),
        gpus=st.integers(1, 2),
        cpu_millis=st.sampled_from([3900, 7900]),
    ),
    min_size=1,
    max_size=2,
    unique_by=lambda k: k.name,
)


@settings(derandomize=True, max_examples=60, deadline=None)
@given(st.lists(_pod, min_size=1, max_size=5), _kinds)
def test_the_optimum_is_brute_forces_never_above_first_fit_and_valid(pods, kinds):
    packing = exact_packing(pods, kinds)
    optimum = _brute_force(pods, kinds)
    if optimum is None:
        assert packing.status == INFEASIBLE
        return
    assert packing.status == OPTIMAL
    assert abs(packing.usd_per_hour - optimum) < 1e-6
    assert packing.gap == 0
    assert placement_problems(packing, pods) == []
    first_fit = best_packing(pods, kinds)
    assert first_fit is not None and packing.usd_per_hour <= first_fit[0] + 1e-6


def test_the_pools_limit_is_kept_even_when_it_costs_more():
    """Four 12 GiB pods, one per small node ($0.7, 15 limit units) or two per big one ($1.5, 20 units): four small
    nodes are cheapest; a limit of 50 units allows one big and two small; 30 units hold no packing at all."""
    pods = [PodShape(1, 12288, 10, 500, 1024)] * 4
    kinds = [_kind("small", 0.7), _kind("big", 1.5, gpus=2)]
    units = {"small": 15, "big": 20}
    assert exact_packing(pods, kinds).nodes_by_type() == {"small": 4}
    limited = exact_packing(pods, kinds, limit=(50, units))
    assert (limited.status, limited.usd_per_hour, limited.nodes_by_type()) == (OPTIMAL, 2.9, {"big": 1, "small": 2})
    assert placement_problems(limited, pods, (50, units)) == []
    assert exact_packing(pods, kinds, limit=(30, units)).status == INFEASIBLE


def test_exclusive_and_time_sliced_types_count_slots_only():
    """Whole GPUs (split 1) and time-sliced replicas (split 4): pods ask no memory or cores, only a GPU's slot."""
    exclusive = NodeType("four-gpu", 10.0, 47900, 190000, 110, 4, 1, 0, 0)
    pods = [PodShape(2, 0, 0, 4000, 8192)] * 3 + [PodShape(1, 0, 0, 4000, 8192)] * 2
    packing = exact_packing(pods, [exclusive])
    assert (packing.status, packing.nodes_by_type()) == (OPTIMAL, {"four-gpu": 2})
    assert placement_problems(packing, pods) == []
    sliced = NodeType("one-gpu", 1.0, 3900, 16000, 110, 1, 4, 0, 0)
    assert exact_packing([PodShape(1, 0, 0, 500, 512)] * 9, [sliced]).nodes_by_type() == {"one-gpu": 3}


def test_a_limit_that_stops_the_proof_reports_the_best_found_and_its_gap():
    """Too little deterministic time to prove anything: a packing with a stated bound, never a silent one."""
    pods = [PodShape(1, 3000 + 500 * (i % 7), 5 + i % 11, 300 + 100 * (i % 5), 1024) for i in range(150)]
    kinds = [_kind("a", 1.0), _kind("b", 1.21, cpu_millis=7900), _kind("c", 1.6, cpu_millis=15900)]
    packing = exact_packing(pods, kinds, deterministic_limit=0.001)
    assert packing.status != OPTIMAL
    assert packing.lower_bound_usd <= packing.usd_per_hour
    assert placement_problems(packing, pods) == []
    assert packing.status != FEASIBLE or packing.gap > 0


def test_the_validator_finds_each_broken_rule():
    kind = _kind("two", 2.0, gpus=2)
    big = PodShape(2, 12288, 60, 500, 1024)
    broken = Packing(
        OPTIMAL,
        (PackedNode(kind, (PlacedPod(big, (0, 0)), PlacedPod(big, (0, 1)), PlacedPod(big, (1,)))),),
        2.0,
        2.5,
    )
    problems = placement_problems(broken, [big, big], (10, {"two": 20}))
    assert any("two vGPUs on one GPU" in p for p in problems)
    assert any("got 1 GPUs" in p for p in problems)
    assert any("MiB of 23028" in p for p in problems)
    assert any("cores of 100" in p for p in problems)
    assert any("places 3 pods" in p for p in problems)
    assert any("limit of 10" in p for p in problems)
    assert any("lower bound" in p for p in problems)
    assert placement_problems(Packing(OPTIMAL, (), 0.0, 0.0), []) == []


@settings(derandomize=True, max_examples=25, deadline=None)
@given(st.lists(_pod, min_size=1, max_size=5), _kinds)
def test_the_node_model_a_pool_with_too_many_contents_gets_finds_the_same_optimum(pods, kinds):
    """Forced onto the node model (one variable per pod shape per candidate node), the same optimum, valid too; the
    resource bound it is floored by never exceeds it."""
    listed = exact_packing(pods, kinds)
    exact.PATTERN_CAP, cap = 0, exact.PATTERN_CAP
    try:
        by_node = exact_packing(pods, kinds)
    finally:
        exact.PATTERN_CAP = cap
    assert by_node.status == listed.status
    assert abs(by_node.usd_per_hour - listed.usd_per_hour) < 1e-6
    if listed.status == OPTIMAL:
        assert placement_problems(by_node, pods) == []
        assert exact.resource_bound(pods, kinds) <= listed.usd_per_hour + 1e-6
