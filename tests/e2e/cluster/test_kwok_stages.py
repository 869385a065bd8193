"""The pod stages the rig gives KWOK: a bound pod runs, a Job's pod completes when its annotations say, a deleted
pod goes."""

from __future__ import annotations

from e2e.cluster.kwok_stages import COMPLETE_AFTER, COMPLETE_AT, pod_stages


def _stages() -> dict[str, dict]:
    return {stage["metadata"]["name"]: stage["spec"] for stage in pod_stages()}


def _keys(spec: dict) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {e["key"]: (e["operator"], tuple(e.get("values", ()))) for e in spec["selector"]["matchExpressions"]}


def test_every_pod_stage_kwok_plays_is_listed_since_listing_one_replaces_its_defaults():
    stages = pod_stages()
    assert [stage["metadata"]["name"] for stage in stages] == ["pod-ready", "pod-complete", "pod-delete"]
    assert {stage["kind"] for stage in stages} == {"Stage"}
    assert {stage["spec"]["resourceRef"]["kind"] for stage in stages} == {"Pod"}


def test_only_a_running_jobs_pod_completes_and_when_its_annotations_say():
    complete = _stages()["pod-complete"]
    assert _keys(complete) == {
        ".metadata.deletionTimestamp": ("DoesNotExist", ()),
        ".status.phase": ("In", ("Running",)),
        ".metadata.ownerReferences.[].kind": ("In", ("Job",)),
    }
    delay = complete["delay"]
    # No annotation: at once, as KWOK's own stage (the scenarios' Jobs); the absolute time wins over the delay.
    assert delay["durationMilliseconds"] == 0
    expression = delay["durationFrom"]["jq"]["expression"]
    assert expression.index(COMPLETE_AT) < expression.index(COMPLETE_AFTER)
    assert "phase: Succeeded" in complete["next"]["statusTemplate"]


def test_a_bound_pod_runs_once_and_a_deleted_pod_goes():
    stages = _stages()
    assert ".status.podIP" in _keys(stages["pod-ready"])
    assert "phase: Running" in stages["pod-ready"]["next"]["statusTemplate"]
    assert stages["pod-delete"]["next"] == {"finalizers": {"empty": True}, "delete": True}
