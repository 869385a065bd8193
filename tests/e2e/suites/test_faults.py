"""The fault scenarios' pure parts: which rig processes may end while the API server is down, and which nodes the
rig collects as the cloud's instance garbage collection would."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from e2e.cluster.api import ApiError
from e2e.cluster.rig import GPU_NODE_PREFIX
from e2e.suites.faults import _collect_orphan_nodes, _node_deleted
from gpushare import names

NODE = "kwok-hsk0-6z29p-takerbloom-6"


class FakeApi:
    def __init__(self, nodes: set[str]) -> None:
        self.nodes = nodes

    def get(self, path: str) -> dict[str, Any]:
        name = path.rsplit("/", 1)[-1]
        if name not in self.nodes:
            raise ApiError(404, f'nodes "{name}" not found')
        return {"metadata": {"name": name}}


class FakeRig:
    def __init__(self, codes: dict[str, int | None]) -> None:
        self.codes = codes

    def exit_code(self, name: str) -> int | None:
        return self.codes[name]


@pytest.mark.parametrize(
    ("process", "code", "nodes", "expected"),
    [
        (f"{GPU_NODE_PREFIX}{NODE}", 0, set(), True),  # its node consolidated: the agent's normal end
        (f"{GPU_NODE_PREFIX}{NODE}", 0, {NODE}, False),  # ended though its node is there
        (f"{GPU_NODE_PREFIX}{NODE}", 255, set(), False),  # klog.Fatalf: a crash, whatever the node
        ("karpenter", 0, set(), False),  # not a GPU node's agent
    ],
)
def test_only_a_gpu_node_agent_that_ended_cleanly_with_its_node_is_set_apart(
    process: str, code: int, nodes: set[str], expected: bool
) -> None:
    ctx = SimpleNamespace(api=FakeApi(nodes))
    assert _node_deleted(ctx, FakeRig({process: code}), process) is expected  # type: ignore[arg-type]


class FakeCluster:
    """NodeClaims and nodes by name, each with its NodePool; what the rig deleted."""

    def __init__(self, claims: dict[str, str], nodes: dict[str, str]) -> None:
        self.claims, self.nodes, self.deleted = claims, nodes, []

    def items(self, path: str) -> list[dict[str, Any]]:
        if path.endswith("/nodeclaims"):
            return [
                {"metadata": {"labels": {names.NODEPOOL_LABEL: "own"}}, "status": {"nodeName": node}}
                for node in self.claims.values()
            ]
        return [
            {"metadata": {"name": name, "labels": {names.NODEPOOL_LABEL: pool}}} for name, pool in self.nodes.items()
        ]

    def request(self, method: str, path: str) -> None:
        self.deleted.append((method, path))


def _context(cluster: FakeCluster) -> SimpleNamespace:
    return SimpleNamespace(api=cluster, owns=lambda pool: pool == "own", changes=None, waited={})


def test_a_node_of_the_scenarios_pools_no_nodeclaim_claims_is_collected() -> None:
    # a: launched before Karpenter's kill and launched again as b on restart; c is another scenario's.
    cluster = FakeCluster(
        {"claim-b": "node-b", "claim-d": "node-d"},
        {"node-a": "own", "node-b": "own", "node-c": "other", "node-d": "own"},
    )
    assert _collect_orphan_nodes(_context(cluster)) == ["node-a"]  # type: ignore[arg-type]
    assert cluster.deleted == [("DELETE", "/api/v1/nodes/node-a")]


def test_nothing_is_collected_when_every_node_has_its_nodeclaim() -> None:
    cluster = FakeCluster({"claim-b": "node-b"}, {"node-b": "own", "node-c": "other"})
    assert _collect_orphan_nodes(_context(cluster)) == []  # type: ignore[arg-type]
    assert cluster.deleted == []
