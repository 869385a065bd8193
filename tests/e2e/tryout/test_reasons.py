"""make try's words per refusal class: each names the number that is too big, what it may be, and what to change."""

from __future__ import annotations

import pytest

from e2e.tryout.reasons import asks_of, pending, refused, team_view
from gpushare import names
from gpushare.catalog import load_catalog
from gpushare.render import tenancy


@pytest.fixture
def team(dev):
    return team_view(dev, load_catalog(), "ml-research")


def _pod(limits, selector=None, annotations=None, requests=None):
    spec = {"containers": [{"name": "m", "resources": {"limits": limits, "requests": requests or {}}}]}
    if selector:
        spec["nodeSelector"] = {names.POOL_LABEL: selector}
    return {"metadata": {"annotations": annotations or {}}, "spec": spec}


def _policy_message(dev, resource):
    """The message the team's per-GPU policy refuses `resource` with, as rendered."""
    [policy, _] = tenancy.per_gpu_limit_policy(dev, dev.teams[0])
    return next(v["message"] for v in policy["spec"]["validations"] if v["message"].startswith(resource))


def test_the_team_view_holds_its_pools_gpus_and_largest_nodes(team):
    pools = {pool.name: pool for pool in team.pools}
    assert pools["g5-shared"].gpu_models == ("A10G",) and pools["g5-shared"].largest_type == "g5.4xlarge"
    assert pools["g4dn-shared"].limits[names.GPU_MEMORY] == 15360
    assert pools["g6-timeslice"].limits == {names.GPU_SHARED: 1}


def test_more_gpu_memory_than_any_gpu_registers(dev, team):
    message = f'pods "big" is forbidden: ... denied request: {_policy_message(dev, "nvidia.com/gpumem")}'
    verdict = refused(message, asks_of(_pod({names.GPU: 1, names.GPU_MEMORY: 40000})), team)
    assert verdict.kind == "gpu-memory"
    assert verdict.reason == (
        "asks 40000 nvidia.com/gpumem (GPU memory) in one container; the largest GPU of the team's pools "
        "(A10G, pool g5-shared) registers 23028"
    )
    assert verdict.change.startswith("ask at most 23028 nvidia.com/gpumem per container")


def test_more_vgpus_than_a_node_has_gpus(dev, team):
    verdict = refused(_policy_message(dev, "nvidia.com/gpu per"), asks_of(_pod({names.GPU: 4})), team)
    assert verdict.kind == "vgpus"
    assert verdict.reason == (
        "asks 4 vGPUs in one container; HAMi gives each a GPU of its own and no node of the team's pools has more "
        "than 1 GPU"
    )


def test_the_quota_names_what_was_asked_used_and_allowed(team):
    message = (
        'pods "dash-x" is forbidden: exceeded quota: ml-research-gpu, requested: requests.nvidia.com/gpu.shared=1, '
        "used: requests.nvidia.com/gpu.shared=8, limited: requests.nvidia.com/gpu.shared=8"
    )
    verdict = refused(message, asks_of(_pod({names.GPU_SHARED: 1})), team)
    assert verdict.kind == "quota"
    assert verdict.reason == (
        "the team's quota is used up (asked requests.nvidia.com/gpu.shared=1, used "
        "requests.nvidia.com/gpu.shared=8, limit requests.nvidia.com/gpu.shared=8)"
    )
    assert "raise gpushare:teams[ml-research].quota" in verdict.change
    hami = pending(["0/3 nodes are available: 3 1/1 ResourceQuotaNotFit."], asks_of(_pod({names.GPU: 1})), team)
    assert hami.kind == "quota"


def test_a_pod_two_pools_hold_is_told_which_selector_picks_which(team):
    message = "a pod asking GPUs must select its pool, one of team ml-research's (g5-shared, g4dn-shared, g6-timeslice)"
    verdict = refused(message, asks_of(_pod({names.GPU: 1, names.GPU_MEMORY: 4000})), team)
    assert verdict.kind == "no-pool"
    assert verdict.reason == "selects no pool, and 2 of the team's pools hold it"
    assert verdict.change == (
        "nodeSelector gpushare.io/pool: g5-shared runs it on g5-shared (A10G, hami); "
        "nodeSelector gpushare.io/pool: g4dn-shared runs it on g4dn-shared (T4, hami)"
    )


def test_no_gpu_of_that_type_in_the_pool(team):
    pod = _pod({names.GPU: 1}, "g5-shared", {"nvidia.com/use-gputype": "H100"})
    verdict = pending(["0/2 nodes are available: 1 1/1 CardTypeMismatch."], asks_of(pod), team)
    assert verdict.kind == "gpu-type"
    assert verdict.reason == "asks a GPU of type H100 (nvidia.com/use-gputype); pool g5-shared has A10G"
    assert verdict.change == "drop the nvidia.com/use-gputype annotation or name one of A10G"
    a10g = pending(
        ["CardInsufficientMemory"], asks_of(_pod({names.GPU: 1}, "g5-shared", {"nvidia.com/use-gputype": "a10g"})), team
    )
    assert a10g.kind == "gpu-full", "a type the pool has is no type mismatch"


def test_the_pool_limit(team):
    message = 'Failed to schedule pod, all available instance types exceed limits for nodepool: "g4dn-shared"'
    verdict = pending([message], asks_of(_pod({names.GPU: 1}, "g4dn-shared")), team)
    assert verdict.kind == "pool-limit"
    assert (
        verdict.reason
        == "pool g4dn-shared is at its limit (4 GPUs, maxGpus): Karpenter may launch no further node for it"
    )


def test_a_cpu_request_no_node_type_holds(team):
    pod = _pod({names.GPU: 1}, "g5-shared", requests={"cpu": "32", "memory": "16Gi"})
    verdict = pending(["no instance type has enough resources"], asks_of(pod), team)
    assert verdict.kind == "node-size"
    assert verdict.reason == (
        "asks 32 vCPUs and 16 GiB; the largest node of pool g5-shared (g5.4xlarge) has 16 vCPUs and 64 GiB"
    )


def test_other_admission_refusals_keep_their_class(team):
    asks = asks_of(_pod({names.GPU: 1}))
    assert (
        refused("gpushare.io/pool and karpenter.sh/nodepool may select only pools of team ml-research", asks, team).kind
        == "other-pool"
    )
    assert refused("priority must be at most 10000, the batch tier", asks, team).kind == "priority"
    assert refused("a pod asking GPUs must tolerate the GPU pools' taint", asks, team).kind == "toleration"
    assert refused("something else", asks, team).kind == "admission"
    assert pending([], asks, team).reason == "not placed when the run settled: no word from anyone"
