"""Every rule: the shipped stacks pass, every rule has a test module with a change that breaks it, and no odd
input crashes a rule; checks that span several rules."""

from __future__ import annotations

import importlib

import pytest

from policies.gpushare_policies.registry import RULES
from tests.policies.helpers import broken, find, messages, messages_by_rule, resources_of, violations
from tests.policies.rules.breaking import (
    MOCK_REPO,
    PER_GPU,
    mock,
    overlay,
    pool,
    release,
    set_at,
    set_device_config,
)


@pytest.mark.parametrize("stack", ["dev", "prod"])
@pytest.mark.parametrize("rule", [rule.name for rule in RULES])
def test_shipped_stacks_pass(plans, stack, rule):
    found = violations(resources_of(plans[stack]), rule)
    if (stack, rule) == ("dev", "eks-public-endpoint-restricted"):
        assert [v.message.split(": ")[0] for v in found] == ["eks:index:Cluster gpushare-dev"]
    elif (stack, rule) == ("dev", "hami-pool-one-priority-tier"):  # on purpose: the e2e `priorities` scenario
        assert [v.message.split(": ")[0] for v in found] == ["NodePool g4dn-shared"]
    else:
        assert found == []


def _cases(rule):
    """The breaking cases of a rule's test module, tests/policies/rules/test_<rule id>.py."""
    module = importlib.import_module(f"{__package__}.test_{rule.replace('-', '_')}")
    return [*getattr(module, "CASES", {}).values(), *getattr(module, "PROD_CASES", {}).values()]


def test_every_rule_has_a_breaking_case():
    cases = [case for rule in RULES for case in _cases(rule.name)]
    assert {policy for policy, _, _ in cases} == {rule.name for rule in RULES}
    for rule in RULES:
        assert {policy for policy, _, _ in _cases(rule.name)} == {rule.name}, rule.name


def test_aws_eks_cluster_shape_is_read(plans):
    """In a real preview the settings sit on pulumi-eks's child aws:eks/cluster:Cluster."""
    resources = resources_of(plans["prod"])
    aws_cluster = {
        "urn": "urn:pulumi:prod::gpushare::eks:index:Cluster$aws:eks/cluster:Cluster::gpushare-prod-eksCluster",
        "type": "aws:eks/cluster:Cluster",
        "name": "gpushare-prod-eksCluster",
        "inputs": {
            "version": "1.34",
            "encryptionConfig": {"provider": {"keyArn": "arn:aws:kms:us-east-1:1:key/x"}, "resources": ["secrets"]},
            "vpcConfig": {"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/0"]},
        },
    }
    resources.append(aws_cluster)
    assert [m.split(": ")[0] for m in messages(resources, "eks-public-endpoint-restricted")] == [
        "aws:eks/cluster:Cluster gpushare-prod-eksCluster"
    ]
    assert messages(resources, "node-security-baseline") == []
    aws_cluster["inputs"]["encryptionConfig"]["resources"] = []
    assert "encryptionConfig not set" in messages(resources, "node-security-baseline")[0]


@pytest.mark.parametrize(
    "requirement",
    [
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2a"]},
        {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["a10g"]},
        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["0"]},
        {"key": "karpenter.k8s.aws/instance-gpu-memory", "operator": "In", "values": ["22888"]},
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["g"]},
        {"key": "karpenter.k8s.aws/instance-generation", "operator": "In", "values": ["5"]},
        {"key": "karpenter.k8s.aws/instance-cpu-manufacturer", "operator": "In", "values": ["amd"]},
    ],
    ids=lambda r: r["key"].rsplit("/", 1)[-1],
)
def test_overlay_requirements_on_labels_karpenter_sets_are_not_unmet(plans, requirement):
    resources = broken(plans["dev"], lambda r: overlay(r)["spec"]["requirements"].append(requirement))
    for rule in ("hami-overlay-coverage", "hami-overlay-capacity-matches"):
        assert messages(resources, rule) == []


def test_startup_taints_need_no_toleration(plans):
    startup = {"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}
    resources = broken(plans["dev"], lambda r: pool(r)["spec"]["template"]["spec"].update(startupTaints=[startup]))
    assert messages(resources, "device-plugins-per-pool") == []


def test_a_digest_pinned_mock_image_is_still_the_mock(plans):
    digest = "sha256:" + "0" * 64
    resources = broken(
        plans["dev"],
        lambda r: set_at(
            mock(r), ["spec", "template", "spec", "containers", 0, "image"], f"{MOCK_REPO}:1.0.1@{digest}"
        ),
    )
    said, shipped = messages_by_rule(resources), messages_by_rule(resources_of(plans["dev"]))
    for rule in RULES:
        assert said[rule.name] == shipped[rule.name], rule.name


def test_an_unsupported_sharing_profile_is_one_finding_that_shows_the_value(plans):
    resources = broken(plans["dev"], lambda r: set_device_config(r, "deviceMemoryScaling", 1.5))
    found = [v for v in violations(resources, "hami-overlay-capacity-matches")]
    assert [v.message.split(": HAMi")[0] for v in found] == [
        "Release hami: values.device-config.content nvidia.deviceMemoryScaling is 1.5: 1.5 is too large; allowed: at "
        "most 1"
    ]
    assert messages(resources, "team-quota-within-pool-limits") == [], "no false 'can provide at most 0'"


@pytest.mark.parametrize(
    "change",
    [
        lambda r: set_at(
            release(r, "nvidia-device-plugin"),
            ["values", "config", "map", "timeslice-4"],
            "version: v1\nsharing:\n  timeSlicing:\n    resources: 5\n",
        ),
        lambda r: set_at(
            release(r, "nvidia-device-plugin"),
            ["values", "config", "map", "timeslice-4"],
            "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: true}\n",
        ),
        lambda r: set_at(
            release(r, "nvidia-device-plugin"),
            ["values", "affinity"],
            {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": ["x"], "operator": "In", "values": 5}]}]
                    }
                }
            },
        ),
        lambda r: set_at(find(r, "ValidatingAdmissionPolicyBinding", PER_GPU), ["spec", "validationActions"], 5),
        lambda r: set_at(find(r, "ValidatingAdmissionPolicy", PER_GPU), ["spec", "validations"], 5),
    ],
    ids=[
        "resources-not-a-list",
        "replicas-a-boolean",
        "affinity-key-list-values-number",
        "actions-number",
        "validations-number",
    ],
)
def test_wrong_types_inside_values_and_policies_never_crash_a_rule(plans, change):
    messages_by_rule(broken(plans["dev"], change))  # no rule may raise
