"""The node agent's repair of KWOK's race: a pod bound to a KWOK node that KWOK left unplayed is touched once it has
waited KWOK_NUDGE_S (being deleted or not), and no other pod is."""

from __future__ import annotations

from typing import Any

from e2e.cluster import node_agent
from e2e.cluster.node_agent import KWOK_NUDGE_ANNOTATION, KWOK_NUDGE_S, NodeAgent


class FakeApi:
    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.pods = pods
        self.patched: list[str] = []

    def items(self, path: str) -> list[dict[str, Any]]:
        assert path.startswith("/api/v1/pods?fieldSelector=status.phase")
        return self.pods

    def merge_patch(self, path: str, patch: dict[str, Any]) -> None:
        assert KWOK_NUDGE_ANNOTATION in patch["metadata"]["annotations"]
        self.patched.append(path.rsplit("/", 1)[-1])


def _pod(name: str, node: str, status: dict[str, Any] | None = None, deleting: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "team", "uid": f"uid-{name}"}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": metadata, "spec": {"nodeName": node}, "status": status or {"phase": "Pending"}}


def _agent(api: FakeApi) -> NodeAgent:
    return NodeAgent(api, None, (), lambda *_: None, None)  # type: ignore[arg-type]


def test_only_pods_kwok_left_unplayed_on_its_nodes_are_touched_and_only_after_the_wait(monkeypatch):
    pods = [
        _pod("unplayed", "kwok-a"),
        _pod("played", "kwok-a", {"phase": "Pending", "podIP": "10.0.0.1"}),
        _pod("elsewhere", "real-node"),
        _pod("going", "kwok-a", deleting=True),
        _pod("played-going", "kwok-a", {"phase": "Pending", "podIP": "10.0.0.2"}, deleting=True),
    ]
    api = FakeApi(pods)
    agent = _agent(api)
    clock = [1000.0]
    monkeypatch.setattr(node_agent.time, "monotonic", lambda: clock[0])

    agent._nudge_unplayed_pods({"kwok-a"})
    assert api.patched == []
    clock[0] += KWOK_NUDGE_S - 1
    agent._nudge_unplayed_pods({"kwok-a"})
    assert api.patched == []
    clock[0] += 1
    agent._nudge_unplayed_pods({"kwok-a"})
    assert api.patched == [], "pods are listed at most every KWOK_NUDGE_S / 3"
    clock[0] += KWOK_NUDGE_S / 3
    agent._nudge_unplayed_pods({"kwok-a"})
    assert api.patched == ["unplayed", "going"], "a kubelet would have started the one and stopped the other"


def test_a_pod_played_meanwhile_is_forgotten(monkeypatch):
    api = FakeApi([_pod("unplayed", "kwok-a")])
    agent = _agent(api)
    clock = [0.0]
    monkeypatch.setattr(node_agent.time, "monotonic", lambda: clock[0])
    agent._nudge_unplayed_pods({"kwok-a"})
    api.pods = []
    clock[0] += KWOK_NUDGE_S
    agent._nudge_unplayed_pods({"kwok-a"})
    api.pods = [_pod("unplayed", "kwok-a")]
    clock[0] += KWOK_NUDGE_S
    agent._nudge_unplayed_pods({"kwok-a"})
    assert api.patched == [], "the wait starts again when the pod shows up unplayed again"
