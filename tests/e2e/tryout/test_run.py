"""make try's watch: which NodeClaims count as the cluster still moving (the cluster itself: make try)."""

from __future__ import annotations

import pytest

from e2e.cluster.stack import rig_nodepool_name
from e2e.tryout.reasons import team_view
from e2e.tryout.run import moving_claims
from gpushare import names
from gpushare.catalog import load_catalog


@pytest.fixture
def team(dev):
    return team_view(dev, load_catalog(), "ml-research")


def _claim(name, pool):
    return {"metadata": {"name": name, "labels": {names.NODEPOOL_LABEL: rig_nodepool_name(pool)}}}


def _pending(uid, pool=None, annotations=None, requests=None, node=None, phase="Pending"):
    spec = {
        "containers": [
            {"name": "m", "resources": {"limits": {names.GPU: 1, names.GPU_MEMORY: 4000}, "requests": requests or {}}}
        ]
    }
    if pool:
        spec["nodeSelector"] = {names.POOL_LABEL: pool}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"uid": uid, "annotations": annotations or {}}, "spec": spec, "status": {"phase": phase}}


H100 = {"nvidia.com/use-gputype": "H100"}
CLAIMS = [_claim("a", "g5-shared"), _claim("b", "g4dn-shared")]


def _names(claims):
    return [claim["metadata"]["name"] for claim in claims]


def test_a_pool_whose_pending_pods_all_have_their_answer_is_not_moving(team):
    pods = [_pending("h100", "g5-shared", H100), _pending("big", "g5-shared", requests={"cpu": "32"})]
    assert _names(moving_claims(CLAIMS, pods, [], team)) == ["b"]


def test_hamis_type_refusal_is_an_answer_too(team):
    refusal = {"involvedObject": {"uid": "p"}, "reason": "FilteringFailed", "message": "... CardTypeMismatch ..."}
    pods = [_pending("p", "g5-shared", {"nvidia.com/nouse-gputype": "L4"})]
    assert _names(moving_claims(CLAIMS, pods, [refusal], team)) == ["b"]
    assert _names(moving_claims(CLAIMS, pods, [], team)) == ["a", "b"]


def test_a_pod_that_may_still_run_keeps_its_pools_claims_moving(team):
    pods = [_pending("h100", "g5-shared", H100), _pending("waits", "g5-shared")]
    assert _names(moving_claims(CLAIMS, pods, [], team)) == ["a", "b"]


def test_an_unanswered_pod_of_no_pool_keeps_every_claim_moving(team):
    pods = [_pending("h100", "g5-shared", H100), _pending("anywhere")]
    assert _names(moving_claims(CLAIMS, pods, [], team)) == ["a", "b"]


def test_bound_and_finished_pods_are_not_pending(team):
    pods = [
        _pending("h100", "g5-shared", H100),
        _pending("bound", "g5-shared", node="n1", phase="Pending"),
        _pending("done", "g5-shared", phase="Succeeded"),
    ]
    assert _names(moving_claims(CLAIMS, pods, [], team)) == ["b"]
