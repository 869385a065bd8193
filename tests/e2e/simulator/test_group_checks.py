"""The group checks every demand file shares (e2e.simulator.group_checks): the team and pool are the stack's, and
some node of the pool holds the pod."""

from __future__ import annotations

from typing import Any

import pytest

from e2e.simulator.demand import PodRequests
from e2e.simulator.group_checks import NodeRoom, PoolRoom
from tests.e2e.simulator.sample_trace import CHAT, keys_of, problems_of, raw_trace

# Class 1: a trace that can never run, or that the rig would silently change. One valid and one breaking case per
# way it can break, judged by the stack's own capacity model.
NEVER_HOLDS = [
    ("more vGPUs than any type of the pool has GPUs", {"vgpus": 2}, "vgpus", "at most 1 GPU(s) per node"),
    ("more gpuMemoryMib than one GPU registers", {"gpuMemoryMib": 15361}, "gpuMemoryMib", "at most 15360 MiB"),
    ("more CPU than any node offers pods", {"cpu": "8"}, "cpu", "at most 7900m"),
    ("more memory than any node offers pods", {"memory": "32Gi"}, "memory", "at most 32758Mi"),
    ("a HAMi pool's group without gpuMemoryMib", {"gpuMemoryMib": None}, "gpuMemoryMib", "required on pool"),
    ("a HAMi pool's group without gpuCores", {"gpuCores": None}, "gpuCores", "required on pool"),
]


@pytest.mark.parametrize(("case", "change", "key", "says"), NEVER_HOLDS, ids=[c[0] for c in NEVER_HOLDS])
def test_a_pod_no_node_of_its_pool_can_hold_is_refused(case: str, change: dict[str, Any], key: str, says: str):
    group = {k: v for k, v in {**CHAT, **change}.items() if v is not None}
    [problem] = problems_of(raw_trace(deployments=[group]))
    assert problem.startswith(f"deployments[0].{key}: ")
    assert says in problem


FITS = [
    ("one vGPU", {"vgpus": 1}),
    ("a whole T4's registered memory", {"gpuMemoryMib": 15360}),
    ("the largest node's CPU less the rig's reserve", {"cpu": "7900m"}),
    ("the largest node's memory less the rig's reserve", {"memory": "32000Mi"}),
]


@pytest.mark.parametrize(("case", "change"), FITS, ids=[c[0] for c in FITS])
def test_a_pod_at_the_pools_limit_is_accepted(case: str, change: dict[str, Any]):
    assert problems_of(raw_trace(deployments=[{**CHAT, **change}])) == []


def test_each_request_can_fit_some_type_but_not_all_on_the_same_one():
    """A pool whose many-GPU type has little CPU and whose CPU-rich type has one GPU holds neither pod that needs
    both: each key is within some type, the pod within none."""
    rooms = (NodeRoom("gpus", 4, 23028, 100, 8000, 65536), NodeRoom("cpus", 1, 23028, 100, 32000, 65536))
    pool = PoolRoom("mixed", "hami", rooms)
    fits = PodRequests(name="a", team="t", pool="mixed", vgpus=4, gpuMemoryMib=1000, gpuCores=10, cpu="4")
    assert pool.holds(fits) == []
    [(key, problem)] = pool.holds(fits.model_copy(update={"cpu": "16"}))
    assert key == "(group)"
    assert problem.startswith("no instance type of pool mixed holds cpu 16000m, memory 1024Mi, vgpus 4")


def test_time_sliced_pools_give_a_container_one_replica():
    notebook = {"name": "nb", "team": "ml-research", "pool": "g6-timeslice", "replicas": {"08:00": 1}}
    assert problems_of(raw_trace(deployments=[notebook])) == []
    [problem] = problems_of(raw_trace(deployments=[{**notebook, "vgpus": 2}]))
    assert problem.startswith("deployments[0].vgpus: 2 on pool g6-timeslice (time-sliced)")
    assert "allowed: 1" in problem


def test_teams_and_pools_are_checked_against_the_stack():
    problems = problems_of(
        raw_trace(deployments=[{**CHAT, "team": "nobody"}, {**CHAT, "name": "b", "pool": "g5-shared"}])
    )
    assert keys_of(problems) == ["deployments[0].team", "deployments[1].pool"]
    assert "allowed: g4dn-shared" in problems[1]
