"""The engine phase's pure parts: the stack file it installs, the rig's transforms, and how it compares the cluster
with the plan."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from e2e.cluster.engine import changed_objects, contained, existing_document, karpenter_record
from e2e.cluster.engine_program import rig_object
from e2e.cluster.stack import KWOK_NODE_CLASS, RIG_CONSOLIDATE_AFTER, Plan, stack_file
from gpushare import names, pins
from gpushare.config import StackConfig
from gpushare.existing import gate_problems, needed_gates
from gpushare.loader import load_stack_config
from tests.conftest import PLAN_DATE

STARTED = datetime(2026, 11, 26, 9, 30, tzinfo=UTC)
GATES = {"NodeOverlay": "true"}


@pytest.fixture
def charts(tmp_path: Path) -> Path:
    """A folder holding an archive of each chart dev deploys, at its pin (the loader checks the folder's listing)."""
    for chart, version in (
        (names.HAMI_CHART, pins.chart_version(names.HAMI_CHART)),
        (names.NVIDIA_PLUGIN_CHART, pins.chart_version(names.NVIDIA_PLUGIN_CHART)),
    ):
        (tmp_path / f"{chart}-{version}.tgz").write_bytes(b"")
    return tmp_path


def _config(document: dict) -> StackConfig:
    return load_stack_config(document["config"], today=PLAN_DATE)


def test_the_engine_stack_is_dev_in_the_existing_cluster_mode(charts: Path) -> None:
    document = existing_document(stack_file("dev"), GATES, charts)
    config = _config(document)
    assert config.existing_cluster is not None
    assert config.existing_cluster.context == "rig"
    assert [pool.name for pool in config.pools] == [pool.name for pool in _config(stack_file("dev")).pools]
    assert document["config"]["gpushare:charts"] == {"folder": str(charts)}


def test_the_recorded_karpenter_has_the_gates_the_stack_needs(charts: Path) -> None:
    config = _config(existing_document(stack_file("dev"), GATES, charts))
    containers = karpenter_record(GATES)["spec"]["template"]["spec"]["containers"]
    assert needed_gates(config)
    assert gate_problems("kube-system/karpenter", containers, needed_gates(config)) == []
    assert gate_problems("kube-system/karpenter", [], needed_gates(config))


def _nodepool(name: str) -> dict:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"}}
            },
            "disruption": {
                "consolidateAfter": "10m",
                "budgets": [{"nodes": "0", "schedule": "0 9 * * 1-5", "duration": "8h"}],
            },
        },
    }


def test_the_transform_points_pools_at_the_kwok_node_class_with_the_rigs_timings() -> None:
    pool = rig_object(_nodepool("g5-shared"), STARTED, None)
    assert pool["spec"]["template"]["spec"]["nodeClassRef"]["kind"] == KWOK_NODE_CLASS["kind"]
    assert pool["spec"]["disruption"]["consolidateAfter"] == RIG_CONSOLIDATE_AFTER
    assert pool["spec"]["disruption"]["budgets"][0]["schedule"] == "30 21 * * *"
    assert len(pool["metadata"]["name"]) <= 5


def _overlay() -> dict:
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": "g5-shared-g5-xlarge"},
        "spec": {
            "requirements": [{"key": names.NODEPOOL_LABEL, "operator": "In", "values": ["g5-shared"]}],
            "capacity": {names.GPU_MEMORY: "23028", names.GPU: "10"},
        },
    }


def test_the_overlay_variant_promises_more_memory_and_the_plain_run_does_not() -> None:
    plain = rig_object(_overlay(), STARTED, None)
    inflated = rig_object(_overlay(), STARTED, 2)
    assert plain["spec"]["capacity"][names.GPU_MEMORY] == "23028"
    assert inflated["spec"]["capacity"][names.GPU_MEMORY] == "46056"
    assert inflated["spec"]["capacity"][names.GPU] == "10"
    assert plain["spec"]["requirements"][0]["values"] == inflated["spec"]["requirements"][0]["values"] != ["g5-shared"]
    declared = rig_object(_overlay(), None, 2)
    assert declared["spec"]["requirements"][0]["values"] == ["g5-shared"]
    assert declared["spec"]["capacity"][names.GPU_MEMORY] == "46056"


def test_server_defaults_are_no_difference_but_a_changed_value_is() -> None:
    want = {"metadata": {"name": "q"}, "spec": {"hard": {"nvidia.com/gpu": "4"}}}
    have = {"metadata": {"name": "q", "uid": "1"}, "spec": {"hard": {"nvidia.com/gpu": "4"}, "scopes": []}}
    assert contained(want, have) == []
    have["spec"]["hard"]["nvidia.com/gpu"] = "3"
    assert contained(want, have) == [".spec.hard.nvidia.com/gpu: '3' instead of '4'"]
    assert contained({"spec": {"list": [1, 2]}}, {"spec": {"list": [1]}})
    assert contained({"globalDefault": False}, {}) == []
    assert contained({"globalDefault": True}, {})


def test_changed_objects_are_those_whose_manifests_differ() -> None:
    quota = {"kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "t"}, "spec": {"hard": {"a": "1"}}}
    namespace = {"kind": "Namespace", "metadata": {"name": "t"}}
    changed = {**quota, "spec": {"hard": {"a": "2"}}}
    assert changed_objects(Plan("a", (quota, namespace), {}), Plan("b", (changed, namespace), {})) == {
        "ResourceQuota/t/q"
    }
