"""The per-GPU packing bound of `make simulate`: HAMi's placement rules, and cheaper than any worse packing."""

from __future__ import annotations

from e2e.simulator.packing import NodeType, PodShape, best_packing


def _kind(name: str, usd: float, gpus: int = 1, cpu_millis: int = 3900, gpu_memory_mib: int = 23028) -> NodeType:
    return NodeType(name, usd, cpu_millis, 16000, 110, gpus, 10, gpu_memory_mib, 100)


def _pods(count: int, mib: int, cores: int = 10, vgpus: int = 1, cpu_millis: int = 500) -> list[PodShape]:
    return [PodShape(vgpus, mib, cores, cpu_millis, 1024)] * count


def test_memory_that_fits_the_node_sum_but_no_single_gpu_takes_more_nodes():
    """Two 12 GiB vGPUs fit a 2-GPU node (one per GPU) but a 1-GPU node of the same total memory holds one."""
    assert best_packing(_pods(2, 12288), [_kind("two", 2.0, gpus=2, gpu_memory_mib=23028)]) == (2.0, {"two": 1})
    assert best_packing(_pods(2, 12288), [_kind("one-big", 1.5, gpu_memory_mib=46056)]) == (1.5, {"one-big": 1})
    assert best_packing(_pods(2, 12288), [_kind("one", 1.0)]) == (2.0, {"one": 2})


def test_at_most_split_count_vgpus_per_gpu_and_cores_per_gpu():
    assert best_packing(_pods(11, 1024, cores=1), [_kind("one", 1.0)]) == (2.0, {"one": 2})
    assert best_packing(_pods(3, 1024, cores=50), [_kind("one", 1.0)]) == (2.0, {"one": 2})


def test_a_pods_vgpus_go_to_distinct_gpus_of_one_node():
    assert best_packing(_pods(1, 1024, vgpus=2), [_kind("one", 1.0)]) is None
    assert best_packing(_pods(1, 1024, vgpus=2), [_kind("one", 1.0), _kind("four", 5.0, gpus=4)]) == (5.0, {"four": 1})


def test_cpu_limits_pods_per_node():
    assert best_packing(_pods(8, 1024, cpu_millis=500), [_kind("one", 1.0)]) == (2.0, {"one": 2})


def test_nodes_shrink_to_the_cheapest_type_that_holds_them():
    """17 pods: a small node holds 7 (CPU), a big one 10 (vGPUs per GPU). Small only: 3 nodes, $3.0; big only:
    2 nodes, $2.6; first-fit onto big nodes with the remainder shrunk to a small one: $2.3."""
    kinds = [_kind("small", 1.0, cpu_millis=3900), _kind("big", 1.3, cpu_millis=7900)]
    assert best_packing(_pods(17, 1024, cpu_millis=500), kinds) == (2.3, {"big": 1, "small": 1})
