"""Config of the existing-cluster mode: the shipped example loads; every bad input is one line naming its key."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from gpushare import names, pins
from gpushare.errors import ConfigError
from gpushare.loader import load_stack_config
from tests.conftest import PLAN_DATE, raw_stack

EXISTING = "gpushare:existingCluster"
KUBECONFIG = json.dumps(
    {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://203.0.113.10"}}],
        "contexts": [{"name": "platform", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "platform",
        "users": [{"name": "u", "user": {"token": "s3cr3t-token"}}],
    }
)


def lines(raw: dict[str, Any]) -> list[str]:
    """The error lines loading `raw` gives (none: it loads)."""
    try:
        load_stack_config(raw, today=PLAN_DATE)
    except ConfigError as error:
        return str(error).splitlines()
    return []


def test_the_shipped_example_states_an_existing_cluster():
    config = load_stack_config(raw_stack("existing"), today=PLAN_DATE)
    existing = config.existing_cluster
    assert existing is not None and existing.kubeconfig is None and existing.context == "platform-prod"
    assert (existing.karpenter.namespace, existing.karpenter.deployment) == (names.KARPENTER_NAMESPACE, "karpenter")
    assert config.karpenter_version == existing.karpenter.version
    assert config.karpenter_version_key == f"{EXISTING}.karpenter.version"
    assert config.cluster.endpoint is None
    # No Karpenter chart is deployed: the running one reads the stack's objects.
    assert not {names.KARPENTER_CHART, names.KARPENTER_CRD_CHART} & config.charts()


def test_a_new_cluster_still_needs_its_endpoint():
    raw = raw_stack("dev")
    del raw["gpushare:cluster"]["endpoint"]
    assert lines(raw) == ["gpushare:cluster.endpoint: is required (who may reach the new cluster's API)"]


NEW_CLUSTER_KEYS = {
    "network": {"vpcCidr": "10.20.0.0/16"},
    "systemNodeGroup": {"minSize": 2},
    "endpoint": {"publicAccess": True, "publicAccessCidrs": ["0.0.0.0/0"]},
    "adminPrincipalArns": ["arn:aws:iam::123456789012:role/ci"],
    "logRetentionDays": 30,
    "supportType": "EXTENDED",
}


@pytest.mark.parametrize("key", list(NEW_CLUSTER_KEYS))
def test_each_key_of_a_new_cluster_is_refused_beside_it(key):
    raw = raw_stack("existing")
    raw["gpushare:cluster"][key] = NEW_CLUSTER_KEYS[key]
    [line] = lines(raw)
    assert line.startswith(f"gpushare:cluster.{key}: is set with {EXISTING}, but it ")
    assert line.endswith(
        "allowed: drop it: with gpushare:existingCluster the stack creates no AWS resource and the "
        "cluster is not its own"
    )


def test_every_refused_key_is_its_own_line():
    raw = raw_stack("existing")
    raw["gpushare:cluster"].update(NEW_CLUSTER_KEYS)
    raw["gpushare:karpenter"]["chartVersion"] = "1.15.1"
    raw["gpushare:teams"][0]["namespaceAccessRoleArn"] = "arn:aws:iam::123456789012:role/inference"
    found = lines(raw)
    assert len(found) == len(NEW_CLUSTER_KEYS) + 2, found
    assert any(
        line.startswith(
            "gpushare:karpenter.chartVersion: is set with gpushare:existingCluster, where the "
            "stack installs no Karpenter"
        )
        for line in found
    )
    assert any(
        line.startswith(
            "gpushare:teams[0].namespaceAccessRoleArn: is set with gpushare:existingCluster, "
            "where the stack creates no EKS access entry"
        )
        and "namespace inference" in line
        for line in found
    )


def test_the_clusters_kubernetes_minor_must_be_stated():
    raw = raw_stack("existing")
    del raw["gpushare:cluster"]["kubernetesVersion"]
    [line] = lines(raw)
    assert line.startswith(f"gpushare:cluster.kubernetesVersion: is required with {EXISTING}: the minor of")


def test_an_existing_clusters_support_window_is_its_owners():
    """A minor past EKS standard support is refused for a cluster the stack creates unless EXTENDED; an existing
    cluster's upgrade policy is not the stack's, so only the kube-scheduler pin is judged."""
    raw = raw_stack("existing")
    raw["gpushare:cluster"]["kubernetesVersion"] = "1.34"
    for team in raw["gpushare:teams"]:
        team["priority"] = "standard"  # MutatingAdmissionPolicy needs 1.36
    load_stack_config(raw, today=PLAN_DATE)
    raw["gpushare:cluster"]["kubernetesVersion"] = "1.33"
    [line] = lines(raw)
    assert line.startswith("gpushare:cluster.kubernetesVersion: 1.33 has no kube-scheduler patch pinned for HAMi")


Change = Callable[[dict[str, Any]], None]


def _existing(change: Callable[[dict[str, Any]], None]) -> Change:
    return lambda raw: change(raw[EXISTING])


BAD_INPUTS: dict[str, tuple[Change, str]] = {
    "no karpenter": (_existing(lambda e: e.pop("karpenter")), f"{EXISTING}.karpenter: is required"),
    "no version": (_existing(lambda e: e["karpenter"].pop("version")), f"{EXISTING}.karpenter.version: is required"),
    "v-prefixed version": (
        _existing(lambda e: e["karpenter"].update(version="v1.15.1")),
        f"{EXISTING}.karpenter.version: 'v1.15.1': Karpenter's OCI charts are tagged without a leading v",
    ),
    "version without NodeOverlay": (
        _existing(lambda e: e["karpenter"].update(version="1.6.2")),
        f"{EXISTING}.karpenter.version: 1.6.2 has no NodeOverlay; allowed: 1.7.0 or newer",
    ),
    "bad namespace": (
        _existing(lambda e: e["karpenter"].update(namespace="Kube_System")),
        f"{EXISTING}.karpenter.namespace: 'Kube_System' is not a namespace name like kube-system",
    ),
    "unknown gate": (
        _existing(lambda e: e["karpenter"]["featureGates"].update(nodeRepair=True)),
        f"{EXISTING}.karpenter.featureGates.nodeRepair: unknown key",
    ),
    "overlay gate off": (
        _existing(lambda e: e["karpenter"]["featureGates"].update(nodeOverlay=False)),
        f"{EXISTING}.karpenter.featureGates.nodeOverlay: false, but pools g5-shared need NodeOverlays, which Karpenter "
        "ignores with the NodeOverlay gate off; allowed: turn the gate on in that Karpenter",
    ),
    "buffer gate off": (
        _existing(lambda e: e["karpenter"]["featureGates"].pop("capacityBuffer")),
        f"{EXISTING}.karpenter.featureGates.capacityBuffer: false, but teams inference keep warm headroom "
        "(CapacityBuffers), which Karpenter ignores with the CapacityBuffer gate off; allowed: turn the gate on in "
        "that Karpenter (settings.featureGates.capacityBuffer: true) and state capacityBuffer: true, or no headroom",
    ),
    "no node class": (_existing(lambda e: e.pop("nodeClass")), f"{EXISTING}.nodeClass: is required"),
    "neither role nor profile": (
        _existing(lambda e: e["nodeClass"].pop("role")),
        f"{EXISTING}.nodeClass.role: neither of role and instanceProfile set; allowed: exactly one of them",
    ),
    "role and profile": (
        _existing(lambda e: e["nodeClass"].update(instanceProfile="gpu-nodes")),
        f"{EXISTING}.nodeClass.role: both of role and instanceProfile set; allowed: exactly one of them",
    ),
    "role as an ARN": (
        _existing(lambda e: e["nodeClass"].update(role="arn:aws:iam::123456789012:role/KarpenterNodeRole")),
        f"{EXISTING}.nodeClass.role: 'arn:aws:iam::123456789012:role/KarpenterNodeRole' is not an IAM role name (not "
        "an ARN)",
    ),
    "subnet term with tags and id": (
        _existing(
            lambda e: e["nodeClass"].update(
                subnetSelectorTerms=[{"tags": {"tier": "private"}, "id": "subnet-0123456789abcdef0"}]
            )
        ),
        f"{EXISTING}.nodeClass.subnetSelectorTerms[0]: sets tags and id; allowed: exactly one of tags, id",
    ),
    "empty security group term": (
        _existing(lambda e: e["nodeClass"].update(securityGroupSelectorTerms=[{}])),
        f"{EXISTING}.nodeClass.securityGroupSelectorTerms[0]: sets none; allowed: exactly one of tags, id, name",
    ),
    "empty tag value": (
        _existing(lambda e: e["nodeClass"].update(subnetSelectorTerms=[{"tags": {"tier": ""}}])),
        f"{EXISTING}.nodeClass.subnetSelectorTerms[0].tags.tier: the EC2NodeClass CRD refuses empty tag keys",
    ),
    "bad subnet id": (
        _existing(lambda e: e["nodeClass"].update(subnetSelectorTerms=[{"id": "subnet-1"}])),
        f"{EXISTING}.nodeClass.subnetSelectorTerms[0].id: 'subnet-1' is not a subnet id",
    ),
    "context missing from the kubeconfig": (
        _existing(lambda e: e.update(kubeconfig=KUBECONFIG, context="other")),
        f"{EXISTING}.context: 'other' is no context of kubeconfig; allowed: platform",
    ),
    "unknown key": (_existing(lambda e: e.update(endpoint="x")), f"{EXISTING}.endpoint: unknown key"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_each_bad_input_is_one_line_naming_its_key(case):
    change, expected = BAD_INPUTS[case]
    raw = raw_stack("existing")
    change(raw)
    found = lines(raw)
    assert len(found) == 1, found
    assert found[0].startswith(expected), found[0]


@pytest.mark.parametrize("text", ["", "clusters: 3", "[not, a, kubeconfig", json.dumps({"kind": "Config"})])
def test_a_kubeconfig_that_is_not_one_is_refused_without_repeating_it(text):
    raw = raw_stack("existing")
    raw[EXISTING]["kubeconfig"] = text + " s3cr3t-token" if text else text
    [line] = lines(raw)
    assert line.startswith(f"{EXISTING}.kubeconfig: is not")
    assert "s3cr3t" not in line


def test_a_kubeconfig_and_its_context_load_and_stay_unrepeated_in_errors():
    raw = raw_stack("existing")
    raw[EXISTING].update(kubeconfig=KUBECONFIG, context="platform")
    assert load_stack_config(raw, today=PLAN_DATE).existing_cluster.kubeconfig == KUBECONFIG
    raw[EXISTING]["context"] = "elsewhere"
    [line] = lines(raw)
    assert "s3cr3t" not in line


def test_a_gate_no_pool_needs_may_stay_off():
    """Exclusive pools have no overlays, teams without headroom no buffers: nothing needs those gates."""
    raw = raw_stack("existing")
    raw["gpushare:pools"] = [p for p in raw["gpushare:pools"] if p["sharing"] == "exclusive"]
    raw["gpushare:teams"] = [t for t in raw["gpushare:teams"] if t["name"] == "training"]
    raw[EXISTING]["karpenter"]["featureGates"] = {}
    assert load_stack_config(raw, today=PLAN_DATE).existing_cluster.karpenter.feature_gates.node_overlay is False


def test_version_aware_checks_judge_the_running_karpenter():
    """Balanced consolidation needs Karpenter 1.14: the line names the key that holds the running version."""
    raw = raw_stack("existing")
    raw[EXISTING]["karpenter"]["version"] = "1.13.0"
    raw["gpushare:teams"][0].pop("headroom")
    raw[EXISTING]["karpenter"]["featureGates"].pop("capacityBuffer")
    raw["gpushare:pools"][0]["disruption"] = {"consolidationPolicy": "Balanced"}
    [line] = lines(raw)
    assert line.startswith("gpushare:pools[0].disruption.consolidationPolicy:")
    assert f"{EXISTING}.karpenter.version" in line


def test_headroom_needs_a_running_karpenter_with_capacity_buffers():
    raw = raw_stack("existing")
    raw[EXISTING]["karpenter"]["version"] = "1.13.0"
    [line] = lines(raw)
    assert line.startswith("gpushare:teams[0].headroom: needs Karpenter's CapacityBuffer")
    assert f"but {EXISTING}.karpenter.version is 1.13.0; allowed: version 1.14.0 or newer" in line


def test_a_broken_existing_cluster_key_does_not_also_ask_for_a_new_clusters_endpoint():
    raw = raw_stack("existing")
    raw[EXISTING]["karpenter"]["version"] = "one"
    assert lines(raw) == [f"{EXISTING}.karpenter.version: 'one': is not a chart tag like 1.15.1"]


def test_the_new_cluster_mode_defaults_still_hold():
    assert load_stack_config(raw_stack("dev"), today=PLAN_DATE).karpenter_version == pins.chart_version("karpenter")
